/* legacy_trainer_mpi: one rank of a data-parallel MPI job, in the FP32
 * way of its time. Each rank has a whole copy of the network on its own
 * device, trains on its share of every batch, and the gradients are
 * averaged on the host with MPI_Allreduce between the backward pass and
 * the update, so that every rank applies the same step. */
#include "trainer.h"

#include <limits.h>
#include <mpi.h>

/* An MPI call's error class and text; 1 when it failed (reported). */
static int
mpi_failed(const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (rc == MPI_SUCCESS)
        return 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "error %d", rc);
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s\n", what, text);
    return 1;
}

int
world_join(int *argc, char ***argv, struct world *w)
{
    MPI_Comm host;

    *w = (struct world){ .rank = 0, .size = 1, .local_rank = 0 };
    if (mpi_failed("MPI_Init", MPI_Init(argc, argv)))
        return -1;
    /* Errors come back as statuses, to be reported as the CUDA ones. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (mpi_failed("MPI_Comm_rank", MPI_Comm_rank(MPI_COMM_WORLD, &w->rank)) ||
        mpi_failed("MPI_Comm_size", MPI_Comm_size(MPI_COMM_WORLD, &w->size)) ||
        /* The ranks that share this host's devices, in rank order. */
        mpi_failed("MPI_Comm_split_type",
                   MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                       w->rank, MPI_INFO_NULL, &host)))
        return -1;
    if (mpi_failed("MPI_Comm_rank", MPI_Comm_rank(host, &w->local_rank))) {
        MPI_Comm_free(&host);
        return -1;
    }
    MPI_Comm_free(&host);
    return 0;
}

int
world_pick_device(const struct world *w)
{
    int count = 0;

    if (cuda_failed("cudaGetDeviceCount", cudaGetDeviceCount(&count)))
        return -1;
    if (count < 1) {
        fprintf(stderr, EXAMPLE_PROG ": rank %d: no CUDA device\n", w->rank);
        return -1;
    }
    return cuda_failed("cudaSetDevice",
                       cudaSetDevice(w->local_rank % count)) ? -1 : 0;
}

int
world_sum(const struct world *w, double *v, int n)
{
    return mpi_failed("MPI_Allreduce",
                      MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM,
                                    MPI_COMM_WORLD)) ? -1 : 0;
}

int
world_average(float *grads, size_t n, void *arg)
{
    const struct world *w = arg;
    float scale = 1.0f / (float)w->size;

    /* MPI counts are ints: the network's 3.5 million parameters fit. */
    if (n > (size_t)INT_MAX) {
        fprintf(stderr, EXAMPLE_PROG ": %zu gradients are too many for one "
                "MPI_Allreduce\n", n);
        return -1;
    }
    if (mpi_failed("MPI_Allreduce",
                   MPI_Allreduce(MPI_IN_PLACE, grads, (int)n, MPI_FLOAT,
                                 MPI_SUM, MPI_COMM_WORLD)))
        return -1;
    for (size_t i = 0; i < n; i++)
        grads[i] *= scale;
    return 0;
}

int
world_leave(const struct world *w, int status, int agreed)
{
    if (status != 0 && !agreed && w->size > 1) {
        fprintf(stderr, EXAMPLE_PROG ": rank %d failed; ending the job\n",
                w->rank);
        MPI_Abort(MPI_COMM_WORLD, status);
    }
    MPI_Finalize();
    return status;
}
