/* legacy_trainer: the pieces its files share (the data set, the network
 * and the checks of vendor statuses). An FP32 CNN trainer in the style of
 * the years before mixed precision: cuBLAS and cuDNN only, no kernels of
 * its own. */
#ifndef LEGACY_TRAINER_H
#define LEGACY_TRAINER_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

/* The same sources build legacy_trainer_mpi with LEGACY_TRAINER_MPI
 * defined (and world_mpi.c for world_solo.c). */
#ifdef LEGACY_TRAINER_MPI
#define EXAMPLE_PROG "legacy_trainer_mpi"
#else
#define EXAMPLE_PROG "legacy_trainer"
#endif
#include "../example_util.h"

/* Exit statuses beside example_util.h's. */
#define EXIT_NO_DATA 4

/* Where the Debian package dataset-fashion-mnist installs the files. */
#define FMNIST_PACKAGE "dataset-fashion-mnist"
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

#define IMAGE_SIDE 28
#define IMAGE_PIXELS (IMAGE_SIDE * IMAGE_SIDE)
#define CLASSES 10

/* ---- data.c: Fashion-MNIST from its IDX files ---------------------------- */

/* The first `count` images of one split, normalised to zero mean and unit
 * deviation (the data set's own statistics), row-major 28 x 28 each. */
struct dataset {
    int count;
    float *images;
    unsigned char *labels;
};

/* split: "train" or "t10k". Reads DIR/SPLIT-images-idx3-ubyte.gz (or the
 * file without .gz) and its labels. Returns 0, EXIT_NO_DATA when a file
 * is missing (after saying which package provides it), or EXIT_USAGE when
 * the files are damaged or hold fewer than `count` images. */
int dataset_load(const char *dir, const char *split, int count,
                 struct dataset *set);
void dataset_free(struct dataset *set);

/* ---- net.c: the network on cuBLAS and cuDNN ------------------------------ */

struct net;

/* The CNN for batches of `batch` images with `hidden` units in the first
 * fully connected layer, weights drawn from `seed`; with fc_lt the fully
 * connected layers' forward products run through cuBLASLt with the bias
 * and ReLU fused (as frameworks run a linear layer), their backward ones
 * through cuBLAS as without it; with conv_graph the convolutions run
 * through cuDNN's backend (graph) API, one execution plan per layer and
 * direction. NULL after reporting a failed call. */
struct net *net_create(int batch, int hidden, uint64_t seed, int fc_lt,
                       int conv_graph);
void net_destroy(struct net *net);

/* One SGD step with momentum on `batch` images (host, normalised) and
 * their labels. *loss is the batch's mean cross-entropy before the step,
 * *correct how many it classified right. 0, or -1 after reporting. The
 * same as net_gradients then net_update. */
int net_train_step(struct net *net, const float *images,
                   const unsigned char *labels, float lr, float momentum,
                   double *loss, int *correct);

/* The first half of a step: the gradients of the batch's mean
 * cross-entropy (*loss and *correct as net_train_step's), left in the
 * network's gradient buffer. 0, or -1 after reporting. */
int net_gradients(struct net *net, const float *images,
                  const unsigned char *labels, double *loss, int *correct);

/* Between the halves: copies the gradients to the host, has
 * combine(grads, count, arg) change them there (0 or -1), and copies them
 * back; the data-parallel trainer averages them across its processes so.
 * 0, or -1 after reporting or when combine failed. */
int net_combine_gradients(struct net *net,
                          int (*combine)(float *grads, size_t count,
                                         void *arg),
                          void *arg);

/* The second half: the SGD step with momentum from the gradients. 0, or
 * -1 after reporting. */
int net_update(struct net *net, float lr, float momentum);

/* Classifies `count` images (at most the batch size; the rest of the
 * batch is padding). 0, or -1 after reporting. */
int net_classify(struct net *net, const float *images, int count,
                 const unsigned char *labels, int *correct);

/* Modelled or measured milliseconds of device work since the last call
 * (from events on the network's stream); -1 when they cannot be read. */
double net_device_ms(struct net *net);

/* The device's name, for the output's header. */
const char *net_device_name(const struct net *net);

/* ---- world_solo.c, world_mpi.c: the processes that train together ----- */

/* legacy_trainer is one process (world_solo.c); legacy_trainer_mpi one of
 * the ranks of an MPI job (world_mpi.c), each training on its share of
 * every batch. rank 0 prints the output. */
struct world {
    int rank, size;
    int local_rank;             /* among the ranks on this host */
};

/* Joins the job (MPI_Init); 0, or -1 after reporting. */
int world_join(int *argc, char ***argv, struct world *w);

/* Makes device local_rank modulo the host's device count the current one
 * (cudaSetDevice); the single process keeps the default. 0, or -1 after
 * reporting. */
int world_pick_device(const struct world *w);

/* Replaces v[0..n) by its sum over the ranks (MPI_Allreduce). 0, or -1
 * after reporting. */
int world_sum(const struct world *w, double *v, int n);

/* Replaces the n gradients by their mean over the ranks, on the host
 * (MPI_Allreduce, then divided by the size): net_combine_gradients'
 * combine, arg the world. 0, or -1 after reporting. */
int world_average(float *grads, size_t n, void *arg);

/* Leaves the job and returns status: MPI_Finalize when it is 0 or every
 * rank failed alike (agreed: before training, options and data are the
 * same everywhere), MPI_Abort otherwise, which ends ranks that wait in a
 * collective for this one. */
int world_leave(const struct world *w, int status, int agreed);

#endif
