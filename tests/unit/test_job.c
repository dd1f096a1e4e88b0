/* Unit tests of the job a process belongs to, read from its launcher's
 * variables, and of the %r escape of the paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/job.h"
#include "base/path.h"

#include <stdlib.h>
#include <string.h>

/* The environment a test gives: NAME=value pairs, NULL-terminated. */
static const char *const *vars;

static const char *
table_getenv(const char *name)
{
    size_t len = strlen(name);

    for (const char *const *v = vars; v && *v; v++)
        if (strncmp(*v, name, len) == 0 && (*v)[len] == '=')
            return *v + len + 1;
    return NULL;
}

static void
read_job(struct amp_job *job, const char *const *env)
{
    vars = env;
    amp_job_read(table_getenv, job);
}

static void
test_no_launcher(void **state)
{
    static const char *const env[] = {"HOME=/root", "RANK=3", NULL};
    struct amp_job job;

    (void)state;
    /* RANK alone (without LOCAL_RANK and WORLD_SIZE) is not torchrun's. */
    read_job(&job, env);
    assert_null(job.launcher);
    assert_int_equal(job.rank, -1);
    assert_int_equal(job.local_rank, -1);
    assert_int_equal(job.size, -1);
    assert_string_equal(job.id, "");
}

static void
test_openmpi(void **state)
{
    static const char *const env[] = {
        "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_LOCAL_RANK=1",
        "OMPI_COMM_WORLD_SIZE=8", "OMPI_MCA_ess_base_jobid=2718", NULL};
    struct amp_job job;

    (void)state;
    read_job(&job, env);
    assert_string_equal(job.launcher, "openmpi");
    assert_int_equal(job.rank, 5);
    assert_int_equal(job.local_rank, 1);
    assert_int_equal(job.size, 8);
    assert_string_equal(job.id, "2718");
}

/* srun starts the processes: Slurm's variables, its job id. */
static void
test_slurm(void **state)
{
    static const char *const env[] = {"SLURM_PROCID=12", "SLURM_LOCALID=0",
                                      "SLURM_NTASKS=16", "SLURM_JOB_ID=991",
                                      NULL};
    struct amp_job job;

    (void)state;
    read_job(&job, env);
    assert_string_equal(job.launcher, "slurm");
    assert_int_equal(job.rank, 12);
    assert_int_equal(job.local_rank, 0);
    assert_int_equal(job.size, 16);
    assert_string_equal(job.id, "991");
}

/* torchrun inside a Slurm allocation: its worker's rank, not the node's
 * task; Slurm's job id when torchrun names no run. */
static void
test_torchrun_in_slurm(void **state)
{
    static const char *const env[] = {
        "SLURM_PROCID=1", "SLURM_LOCALID=0", "SLURM_NTASKS=2",
        "SLURM_JOB_ID=77", "RANK=6", "LOCAL_RANK=2", "WORLD_SIZE=8", NULL};
    struct amp_job job;

    (void)state;
    read_job(&job, env);
    assert_string_equal(job.launcher, "torchrun");
    assert_int_equal(job.rank, 6);
    assert_int_equal(job.local_rank, 2);
    assert_int_equal(job.size, 8);
    assert_string_equal(job.id, "77");
}

/* PMIx and PMI launchers (MPICH's hydra, Intel MPI); a value that is not
 * a number is unset. */
static void
test_pmi(void **state)
{
    static const char *const pmix[] = {"PMIX_RANK=3", "PMIX_NAMESPACE=ns.1",
                                       "MPI_LOCALRANKID=3", NULL};
    static const char *const pmi[] = {"PMI_RANK=2", "PMI_SIZE=4",
                                      "MPI_LOCALRANKID=x", NULL};
    static const char *const bad[] = {"OMPI_COMM_WORLD_RANK=-1",
                                      "PMI_RANK=1x", NULL};
    struct amp_job job;

    (void)state;
    read_job(&job, pmix);
    assert_string_equal(job.launcher, "pmix");
    assert_int_equal(job.rank, 3);
    assert_int_equal(job.local_rank, 3);
    assert_int_equal(job.size, -1);
    assert_string_equal(job.id, "ns.1");
    read_job(&job, pmi);
    assert_string_equal(job.launcher, "pmi");
    assert_int_equal(job.rank, 2);
    assert_int_equal(job.local_rank, -1);
    assert_int_equal(job.size, 4);
    read_job(&job, bad);
    assert_null(job.launcher);
}

/* %r: the rank of this process (its environment), 0 outside a job. */
static void
test_rank_escape(void **state)
{
    char out[128];

    (void)state;
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("RANK");
    assert_int_equal(amp_path_expand("r%r-%p.json", 42, out, sizeof out),
                     AMP_OK);
    assert_string_equal(out, "r0-42.json");
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    assert_int_equal(amp_path_expand("run/%r/%%r.json", 42, out, sizeof out),
                     AMP_OK);
    assert_string_equal(out, "run/3/%r.json");
    unsetenv("OMPI_COMM_WORLD_RANK");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_launcher),
        cmocka_unit_test(test_openmpi),
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_torchrun_in_slurm),
        cmocka_unit_test(test_pmi),
        cmocka_unit_test(test_rank_escape),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
