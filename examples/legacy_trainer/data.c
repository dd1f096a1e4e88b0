/* legacy_trainer: Fashion-MNIST from the IDX files (gzip-compressed or
 * not) that the Debian package dataset-fashion-mnist installs. */
#include "trainer.h"

#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u

/* The data set's pixel statistics (on the 0..1 scale). */
#define FMNIST_MEAN 0.2860f
#define FMNIST_STD 0.3530f

/* Opens DIR/NAME.gz, else DIR/NAME (zlib reads plain files too); NULL
 * after saying what is missing and where it comes from. */
static gzFile
idx_open(const char *dir, const char *name, char *path, size_t path_size)
{
    gzFile f;

    snprintf(path, path_size, "%s/%s.gz", dir, name);
    f = gzopen(path, "rb");
    if (f != NULL)
        return f;
    snprintf(path, path_size, "%s/%s", dir, name);
    f = gzopen(path, "rb");
    if (f != NULL)
        return f;
    fprintf(stderr,
            EXAMPLE_PROG ": cannot open %s/%s.gz (nor %s): %s\n"
            EXAMPLE_PROG ": Fashion-MNIST is missing from %s; install the "
            "Debian package " FMNIST_PACKAGE " (apt-get install "
            FMNIST_PACKAGE "), which puts the IDX files in " FMNIST_DIR
            ", or name their directory with --data-dir\n",
            dir, name, path, strerror(errno ? errno : ENOENT), dir);
    return NULL;
}

static int
idx_read(gzFile f, const char *path, void *buf, size_t len)
{
    int errnum;
    int got = gzread(f, buf, (unsigned)len);

    if (got == (int)len)
        return 0;
    if (got < 0)
        fprintf(stderr, EXAMPLE_PROG ": %s: %s\n", path, gzerror(f, &errnum));
    else
        fprintf(stderr, EXAMPLE_PROG ": %s: ends early\n", path);
    return -1;
}

static uint32_t
be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
           (uint32_t)b[3];
}

/* Reads the header (magic, then as many big-endian sizes as its last
 * byte says) and checks it: the first size is the number of items, the
 * others must be IMAGE_SIDE. */
static int
idx_header(gzFile f, const char *path, uint32_t magic, int want)
{
    int ndims = (int)(magic & 0xff);
    unsigned char b[16];
    uint32_t items;

    if (idx_read(f, path, b, 4 * (size_t)(ndims + 1)) != 0)
        return EXIT_USAGE;
    if (be32(b) != magic) {
        fprintf(stderr, EXAMPLE_PROG ": %s: not an IDX file of this kind "
                "(magic 0x%08x, expected 0x%08x)\n", path, be32(b), magic);
        return EXIT_USAGE;
    }
    for (int d = 1; d < ndims; d++) {
        if (be32(b + 4 + 4 * d) != IMAGE_SIDE) {
            fprintf(stderr, EXAMPLE_PROG ": %s: images are not %dx%d\n", path,
                    IMAGE_SIDE, IMAGE_SIDE);
            return EXIT_USAGE;
        }
    }
    items = be32(b + 4);
    if (items < (uint32_t)want) {
        fprintf(stderr, EXAMPLE_PROG ": %s holds %u items, %d asked for\n",
                path, items, want);
        return EXIT_USAGE;
    }
    return 0;
}

/* The first `count` items of DIR/SPLIT-KIND-idx?-ubyte(.gz), `item`
 * bytes each, into *bytes (malloc'd). 0, EXIT_NO_DATA or EXIT_USAGE. */
static int
idx_load(const char *dir, const char *split, const char *kind,
         uint32_t magic, int count, size_t item, unsigned char **bytes)
{
    int ndims = (int)(magic & 0xff);
    char name[64], path[4096];
    gzFile f;
    int rc;

    snprintf(name, sizeof(name), "%s-%s-idx%d-ubyte", split, kind, ndims);
    f = idx_open(dir, name, path, sizeof(path));
    if (f == NULL)
        return EXIT_NO_DATA;
    rc = idx_header(f, path, magic, count);
    if (rc != 0)
        goto out;
    rc = EXIT_USAGE;
    *bytes = malloc((size_t)count * item);
    if (*bytes == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory for %d %s\n", count,
                kind);
        goto out;
    }
    if (idx_read(f, path, *bytes, (size_t)count * item) != 0)
        goto out;
    for (int i = 0; item == 1 && i < count; i++) {
        if ((*bytes)[i] >= CLASSES) {
            fprintf(stderr, EXAMPLE_PROG ": %s: label %d of item %d\n",
                    path, (*bytes)[i], i);
            goto out;
        }
    }
    rc = 0;
out:
    gzclose(f);
    return rc;
}

int
dataset_load(const char *dir, const char *split, int count,
             struct dataset *set)
{
    size_t n = (size_t)count * IMAGE_PIXELS;
    unsigned char *pixels = NULL;
    int rc;

    memset(set, 0, sizeof(*set));
    set->count = count;
    rc = idx_load(dir, split, "images", IDX_IMAGES_MAGIC, count,
                  IMAGE_PIXELS, &pixels);
    if (rc == 0)
        rc = idx_load(dir, split, "labels", IDX_LABELS_MAGIC, count, 1,
                      &set->labels);
    if (rc == 0) {
        set->images = malloc(n * sizeof(float));
        if (set->images == NULL) {
            fprintf(stderr, EXAMPLE_PROG ": out of memory for %d images\n",
                    count);
            rc = EXIT_USAGE;
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        set->images[i] = ((float)pixels[i] / 255.0f - FMNIST_MEAN) /
                         FMNIST_STD;
    free(pixels);
    if (rc != 0)
        dataset_free(set);
    return rc;
}

void
dataset_free(struct dataset *set)
{
    free(set->images);
    free(set->labels);
    set->images = NULL;
    set->labels = NULL;
}
