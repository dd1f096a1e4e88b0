/* The launchers' variables, innermost first. */
#include "base/job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* name's value as a non-negative integer; -1 when unset or not one. */
static long
amp_job_number(amp_getenv_fn getenv_fn, const char *name)
{
    const char *v = name ? getenv_fn(name) : NULL;
    char *end;
    long n;

    if (!v || *v < '0' || *v > '9')
        return -1;
    errno = 0;
    n = strtol(v, &end, 10);
    return errno || *end ? -1 : n;
}

/* One launcher: its variables (NULL: it has none of that kind). */
struct amp_launcher {
    const char *name, *rank, *local_rank, *size, *id;
};

static const struct amp_launcher amp_launchers[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"},
    {"pmix", "PMIX_RANK", "MPI_LOCALRANKID", NULL, "PMIX_NAMESPACE"},
    {"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", NULL},
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
     "SLURM_JOB_ID"},
};

void
amp_job_read(amp_getenv_fn getenv_fn, struct amp_job *job)
{
    size_t i;

    memset(job, 0, sizeof *job);
    job->rank = job->local_rank = job->size = -1;
    for (i = 0; i < sizeof amp_launchers / sizeof *amp_launchers; i++) {
        const struct amp_launcher *l = &amp_launchers[i];
        long rank = amp_job_number(getenv_fn, l->rank);
        const char *id;

        /* RANK alone is too common a name: torchrun sets all three. */
        if (rank < 0 || (i == 0 && (amp_job_number(getenv_fn,
                                                   l->local_rank) < 0 ||
                                    amp_job_number(getenv_fn, l->size) < 0)))
            continue;
        job->launcher = l->name;
        job->rank = rank;
        job->local_rank = amp_job_number(getenv_fn, l->local_rank);
        job->size = amp_job_number(getenv_fn, l->size);
        id = l->id ? getenv_fn(l->id) : NULL;
        /* Slurm gives the job's id whichever launcher runs inside it. */
        if (!id || !*id)
            id = getenv_fn("SLURM_JOB_ID");
        if (id)
            snprintf(job->id, sizeof job->id, "%s", id);
        return;
    }
}

static const char *
amp_job_getenv(const char *name)
{
    return getenv(name);
}

void
amp_job_self(struct amp_job *job)
{
    amp_job_read(amp_job_getenv, job);
}

long
amp_job_rank(void)
{
    struct amp_job job;

    amp_job_self(&job);
    return job.rank < 0 ? 0 : job.rank;
}
