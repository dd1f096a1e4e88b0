/* Which job a process belongs to, from its launcher's environment (no MPI
 * library is linked): Open MPI's mpirun, PMIx and PMI launchers, Slurm's
 * srun, and torchrun. */
#ifndef AMP_JOB_H
#define AMP_JOB_H

#include "base/config.h"

#define AMP_JOB_ID_LEN 128

struct amp_job {
    const char *launcher;  /* "torchrun", "openmpi", "pmix", "pmi",
                              "slurm"; NULL: not started by a launcher */
    long rank;             /* the process's rank in the job; -1: unknown */
    long local_rank;       /* its rank on its host; -1: unknown */
    long size;             /* processes in the job; -1: unknown */
    char id[AMP_JOB_ID_LEN]; /* the job's id ("" when none is given) */
};

/* Reads the job from the environment through getenv_fn. The innermost
 * launcher wins: torchrun's RANK, LOCAL_RANK and WORLD_SIZE (all three),
 * then OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID. A value
 * that is not a non-negative integer counts as unset. */
void amp_job_read(amp_getenv_fn getenv_fn, struct amp_job *job);

/* This process's job (getenv). */
void amp_job_self(struct amp_job *job);

/* The rank as the %r escape writes it: this process's rank in its job, 0
 * outside a job. */
long amp_job_rank(void);

#endif
