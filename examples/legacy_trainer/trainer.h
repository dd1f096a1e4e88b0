/* legacy_trainer: the pieces its files share (the data set, the network
 * and the checks of vendor statuses). An FP32 CNN trainer in the style of
 * the years before mixed precision: cuBLAS and cuDNN only, no kernels of
 * its own. */
#ifndef LEGACY_TRAINER_H
#define LEGACY_TRAINER_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "legacy_trainer"
#include "../example_util.h"

/* Exit statuses beside example_util.h's. */
#define EXIT_NO_DATA 4

/* Where the Debian package dataset-fashion-mnist installs the files. */
#define FMNIST_PACKAGE "dataset-fashion-mnist"
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

#define IMAGE_SIDE 28
#define IMAGE_PIXELS (IMAGE_SIDE * IMAGE_SIDE)
#define CLASSES 10

static inline int
cudnn_failed(const char *what, cudnnStatus_t s)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n", what,
            cudnnGetErrorString(s), (int)s);
    return 1;
}

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
 * *correct how many it classified right. 0, or -1 after reporting. */
int net_train_step(struct net *net, const float *images,
                   const unsigned char *labels, float lr, float momentum,
                   double *loss, int *correct);

/* Classifies `count` images (at most the batch size; the rest of the
 * batch is padding). 0, or -1 after reporting. */
int net_classify(struct net *net, const float *images, int count,
                 const unsigned char *labels, int *correct);

/* Modelled or measured milliseconds of device work since the last call
 * (from events on the network's stream); -1 when they cannot be read. */
double net_device_ms(struct net *net);

/* The device's name, for the output's header. */
const char *net_device_name(const struct net *net);

#endif
