/* legacy_trainer: trains a VGG-style CNN on Fashion-MNIST in FP32 with
 * cuBLAS and cuDNN, as programs were written before mixed precision, and
 * prints one parseable line per epoch. legacy_trainer_mpi is the same
 * program data-parallel over the ranks of an MPI job (world_mpi.c): each
 * rank trains on its share of every batch, the gradients are averaged
 * across the ranks before each update, and rank 0 prints. */
#include "trainer.h"

#include <getopt.h>
#include <limits.h>
#include <time.h>

/* The processes that train together: one for legacy_trainer. */
static struct world world;

struct options {
    int epochs, batch, hidden, train, test, verbose, fc_lt, conv_graph;
    float lr, momentum;
    uint64_t seed;
    const char *data_dir;
};

static void
usage(FILE *out)
{
    fprintf(out,
        "usage: " EXAMPLE_PROG " [options]\n"
        "Trains a VGG-style CNN on Fashion-MNIST in FP32 with cuBLAS and\n"
        "cuDNN, SGD with momentum: blocks of 3x3 convolutions with ReLU\n"
        "(32 channels at 28x28; 64 and 64 at 14x14; 128 and 128 at 7x7;\n"
        "256 and 256 at 3x3), a 2x2 max pooling between blocks, two fully\n"
        "connected layers (2304 -> hidden -> 10), softmax cross-entropy.\n"
        "The convolutions carry most of the work (29.9M multiply-adds per\n"
        "image forward, the fully connected layers 2.4M with 1024 hidden\n"
        "units).\n"
        "\n"
        "  --epochs N       passes over the training images (default 2)\n"
        "  --batch-size N   images per step (default 512); a last partial\n"
        "                   batch of each epoch is left out\n"
        "  --hidden N       units of the first fully connected layer\n"
        "                   (default 1024)\n"
        "  --lr X           learning rate (default 0.003)\n"
        "  --momentum X     momentum, 0 to below 1 (default 0.9)\n"
        "  --train N        training images: the first N of the training\n"
        "                   set, shuffled each epoch (default 60000, all)\n"
        "  --test N         test images: the first N of the test set\n"
        "                   (default 10000, all)\n"
        "  --seed N         weights and shuffling (default 1); a run on the\n"
        "                   CPU emulator is the same for the same seed\n"
        "  --data-dir DIR   the IDX files, gzip-compressed or not (default\n"
        "                   " FMNIST_DIR ", from the Debian\n"
        "                   package " FMNIST_PACKAGE ")\n"
        "  --fc-lt          the fully connected layers' forward products\n"
        "                   through cuBLASLt, bias and ReLU fused in its\n"
        "                   epilogue, as frameworks run a linear layer (the\n"
        "                   backward ones stay on cuBLAS)\n"
        "  --conv-graph     the convolutions (forward, backward data and\n"
        "                   filter) through cuDNN's backend (graph) API:\n"
        "                   one execution plan per layer and direction,\n"
        "                   built once and executed every step, as\n"
        "                   frameworks of today run them\n"
        "  --verbose        also one line per training step\n"
        "  --help           this text\n"
        "\n"
#ifdef LEGACY_TRAINER_MPI
        "Run it with mpirun (mpirun -np N " EXAMPLE_PROG " [options]): each\n"
        "rank uses the device of its local rank modulo the host's devices\n"
        "and computes the gradients of its 1/N of every batch (N divides\n"
        "--batch-size); the gradients are averaged on the host with\n"
        "MPI_Allreduce before every update, so every rank takes the same\n"
        "step and the training is the single process's with that batch.\n"
        "The ranks share the test images. Rank 0 prints; its device_ms is\n"
        "its own device's.\n"
        "\n"
#endif
        "Output, one line each:\n"
        "  device NAME\n"
        "  timing wall|emulated  (emulated: images_per_s is the CPU's speed\n"
        "                         and device_ms the emulator's model)\n"
        "  step EPOCH STEP loss L                       (--verbose)\n"
        "  epoch E loss L train_acc PCT test_acc PCT images_per_s R "
        "device_ms T\n"
        "  final loss L test_acc PCT\n"
        "loss and train_acc are the means over the epoch's steps, each taken\n"
        "before that step's update.\n");
}

/* A whole number in [min, max]. */
static int
parse_int(const char *name, const char *s, long min, long max, int *v)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || x < min || x > max) {
        fprintf(stderr, EXAMPLE_PROG ": %s wants a whole number from %ld to "
                "%ld, not '%s'\n", name, min, max, s);
        return -1;
    }
    *v = (int)x;
    return 0;
}

/* A number in [min, below). */
static int
parse_float(const char *name, const char *s, double min, double below,
            float *v)
{
    char *end;
    double x;

    errno = 0;
    x = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(x >= min && x < below)) {
        fprintf(stderr, EXAMPLE_PROG ": %s wants a number from %g to below "
                "%g, not '%s'\n", name, min, below, s);
        return -1;
    }
    *v = (float)x;
    return 0;
}

/* 0, 1 after --help, or EXIT_USAGE after saying what is wrong. */
static int
parse_options(int argc, char **argv, struct options *o)
{
    enum { O_EPOCHS = 256, O_BATCH, O_HIDDEN, O_LR, O_MOMENTUM, O_TRAIN, O_TEST,
           O_SEED, O_DATA, O_FC_LT, O_CONV_GRAPH, O_VERBOSE, O_HELP };
    static const struct option longopts[] = {
        { "epochs", required_argument, NULL, O_EPOCHS },
        { "batch-size", required_argument, NULL, O_BATCH },
        { "hidden", required_argument, NULL, O_HIDDEN },
        { "lr", required_argument, NULL, O_LR },
        { "momentum", required_argument, NULL, O_MOMENTUM },
        { "train", required_argument, NULL, O_TRAIN },
        { "test", required_argument, NULL, O_TEST },
        { "seed", required_argument, NULL, O_SEED },
        { "data-dir", required_argument, NULL, O_DATA },
        { "fc-lt", no_argument, NULL, O_FC_LT },
        { "conv-graph", no_argument, NULL, O_CONV_GRAPH },
        { "verbose", no_argument, NULL, O_VERBOSE },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    int c, seed, rc = 0;

    *o = (struct options){ .epochs = 2, .batch = 512, .hidden = 1024, .train = 60000,
                           .test = 10000, .lr = 0.003f, .momentum = 0.9f,
                           .seed = 1, .data_dir = FMNIST_DIR };
    while (rc == 0 &&
           (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_EPOCHS:
            rc = parse_int("--epochs", optarg, 1, 1000, &o->epochs);
            break;
        case O_BATCH:
            rc = parse_int("--batch-size", optarg, 1, 4096, &o->batch);
            break;
        case O_HIDDEN:
            rc = parse_int("--hidden", optarg, 1, 16384, &o->hidden);
            break;
        case O_LR:
            rc = parse_float("--lr", optarg, 1e-9, 10.0, &o->lr);
            break;
        case O_MOMENTUM:
            rc = parse_float("--momentum", optarg, 0.0, 1.0, &o->momentum);
            break;
        case O_TRAIN:
            rc = parse_int("--train", optarg, 1, 60000, &o->train);
            break;
        case O_TEST:
            rc = parse_int("--test", optarg, 1, 10000, &o->test);
            break;
        case O_SEED:
            rc = parse_int("--seed", optarg, 0, INT_MAX, &seed);
            o->seed = (uint64_t)seed;
            break;
        case O_DATA:
            o->data_dir = optarg;
            break;
        case O_FC_LT:
            o->fc_lt = 1;
            break;
        case O_CONV_GRAPH:
            o->conv_graph = 1;
            break;
        case O_VERBOSE:
            o->verbose = 1;
            break;
        case O_HELP:
            if (world.rank == 0)
                usage(stdout);
            return 1;
        default:
            rc = -1;
            break;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, EXAMPLE_PROG ": unexpected argument '%s'\n",
                argv[optind]);
        rc = -1;
    }
    if (rc == 0 && o->train < o->batch) {
        fprintf(stderr, EXAMPLE_PROG ": --train %d is smaller than one "
                "batch (--batch-size %d)\n", o->train, o->batch);
        rc = -1;
    }
    if (rc == 0 && o->batch % world.size != 0) {
        fprintf(stderr, EXAMPLE_PROG ": --batch-size %d is not a multiple "
                "of the %d ranks\n", o->batch, world.size);
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "Try '" EXAMPLE_PROG " --help'.\n");
        return EXIT_USAGE;
    }
    return 0;
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fisher-Yates with the trainer's own generator: the same order for the
 * same seed everywhere. */
static void
shuffle(int *order, int n, uint64_t *state)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_next(state) % (uint64_t)(i + 1));
        int t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
}

/* Percent of the test images classified right; -1 after a failure. The
 * ranks take turns at the batches (of the network's size). */
static double
test_accuracy(struct net *net, const struct dataset *test, int batch)
{
    double total = 0.0;

    for (int at = world.rank * batch; at < test->count;
         at += world.size * batch) {
        int count = test->count - at < batch ? test->count - at : batch;
        int correct;

        if (net_classify(net, test->images + (size_t)at * IMAGE_PIXELS,
                         count, test->labels + at, &correct) != 0)
            return -1.0;
        total += correct;
    }
    if (world_sum(&world, &total, 1) != 0)
        return -1.0;
    return 100.0 * total / test->count;
}

/* One step on this rank's share of a batch: with several ranks, their
 * gradients averaged before the update. *loss and *correct are the whole
 * batch's, as with one process. */
static int
train_step(struct net *net, const struct options *o, const float *images,
           const unsigned char *labels, double *loss, int *correct)
{
    double sums[2];

    if (world.size == 1)
        return net_train_step(net, images, labels, o->lr, o->momentum, loss,
                              correct);
    if (net_gradients(net, images, labels, &sums[0], correct) != 0 ||
        net_combine_gradients(net, world_average, &world) != 0 ||
        net_update(net, o->lr, o->momentum) != 0)
        return -1;
    /* The shares are of one size: the batch's mean loss is the mean of
     * theirs. */
    sums[1] = *correct;
    if (world_sum(&world, sums, 2) != 0)
        return -1;
    *loss = sums[0] / world.size;
    *correct = (int)sums[1];
    return 0;
}

struct epoch_result {
    double loss, train_acc, test_acc, images_per_s, device_ms;
};

static int
run_epoch(struct net *net, const struct options *o,
          const struct dataset *train, const struct dataset *test,
          int *order, uint64_t *shuffle_state, int epoch,
          struct epoch_result *r)
{
    int steps = train->count / o->batch, correct_all = 0;
    /* This rank's share of each batch: images [first, first + share). */
    int share = o->batch / world.size, first = world.rank * share;
    size_t image_bytes = IMAGE_PIXELS * sizeof(float);
    float *images = malloc((size_t)share * image_bytes);
    unsigned char *labels = malloc((size_t)share);
    double loss_sum = 0.0, start;
    int rc = -1;

    if (images == NULL || labels == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory\n");
        goto out;
    }
    shuffle(order, train->count, shuffle_state);
    net_device_ms(net);
    start = now_s();
    for (int s = 0; s < steps; s++) {
        double loss;
        int correct;

        for (int i = 0; i < share; i++) {
            int k = order[s * o->batch + first + i];

            memcpy(images + (size_t)i * IMAGE_PIXELS,
                   train->images + (size_t)k * IMAGE_PIXELS, image_bytes);
            labels[i] = train->labels[k];
        }
        if (train_step(net, o, images, labels, &loss, &correct) != 0)
            goto out;
        if (o->verbose && world.rank == 0)
            printf("step %d %d loss %.4f\n", epoch, s + 1, loss);
        loss_sum += loss;
        correct_all += correct;
    }
    r->device_ms = net_device_ms(net);
    r->images_per_s = steps * o->batch / (now_s() - start);
    r->loss = loss_sum / steps;
    r->train_acc = 100.0 * correct_all / (steps * o->batch);
    r->test_acc = test_accuracy(net, test, share);
    if (r->test_acc >= 0.0)
        rc = 0;
out:
    free(images);
    free(labels);
    return rc;
}

static int
train(const struct options *o, const struct dataset *train_set,
      const struct dataset *test_set)
{
    struct epoch_result r = { 0 };
    uint64_t shuffle_state = o->seed ^ 0x53485546464c45ULL;
    int *order = malloc((size_t)train_set->count * sizeof(int));
    struct net *net = NULL;
    int rc = EXIT_CUDA_ERROR;

    if (order == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory\n");
        goto out;
    }
    for (int i = 0; i < train_set->count; i++)
        order[i] = i;
    /* Every rank draws the same weights and the same order from the
     * seed. */
    if (world_pick_device(&world) != 0)
        goto out;
    net = net_create(o->batch / world.size, o->hidden, o->seed, o->fc_lt,
                     o->conv_graph);
    if (net == NULL)
        goto out;
    if (world.rank == 0) {
        printf("device %s\n", net_device_name(net));
        printf("timing %s\n", strstr(net_device_name(net), "(emulated)")
                                 ? "emulated" : "wall");
    }
    for (int e = 1; e <= o->epochs; e++) {
        if (run_epoch(net, o, train_set, test_set, order, &shuffle_state, e,
                      &r) != 0)
            goto out;
        if (world.rank == 0)
            printf("epoch %d loss %.4f train_acc %.2f test_acc %.2f "
                   "images_per_s %.1f device_ms %.3f\n", e, r.loss,
                   r.train_acc, r.test_acc, r.images_per_s, r.device_ms);
    }
    if (world.rank == 0)
        printf("final loss %.4f test_acc %.2f\n", r.loss, r.test_acc);
    rc = EXIT_ALL_PASS;
out:
    net_destroy(net);
    free(order);
    return rc;
}

int
main(int argc, char **argv)
{
    struct dataset train_set = { 0 }, test_set = { 0 };
    struct options o;
    int rc;

    if (world_join(&argc, &argv, &world) != 0)
        return EXIT_CUDA_ERROR;
    rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return world_leave(&world, rc == 1 ? EXIT_ALL_PASS : rc, 1);
    /* Progress shows through a pipe (tee, a demo script) as it happens. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The data first: a missing package is reported before any CUDA
     * call. */
    rc = dataset_load(o.data_dir, "train", o.train, &train_set);
    if (rc == 0)
        rc = dataset_load(o.data_dir, "t10k", o.test, &test_set);
    if (rc != 0) {
        dataset_free(&train_set);
        dataset_free(&test_set);
        return world_leave(&world, rc, 1);
    }
    rc = train(&o, &train_set, &test_set);
    dataset_free(&train_set);
    dataset_free(&test_set);
    /* A rank may fail alone in training (its device): the others then
     * wait for it in a collective. */
    return world_leave(&world, rc, 0);
}
