/* Over the toolkit's own libraries: every import of one of the shim's
 * cuBLAS and cuDNN hooks (a name libampshim.so defines that a library
 * leaves undefined: cuSOLVER's cublasSgemm_v2, cuBLAS's cublasLtMatmul)
 * comes from a library
 * the shim classifies as NVIDIA's (base/caller.h), so the call passes
 * through unless a policy opts in; the imports are printed. NVBLAS is the
 * one exception, printed as such: its GEMMs are the program's own BLAS
 * calls. The libraries the classifier must know are checked by soname
 * whether or not they import a hook. Exit 77 (skipped) without the
 * toolkit's libraries.
 *
 * usage: test_library_imports CUDA_LIB_DIR LIBAMPSHIM NM READELF */
#include "base/caller.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 4096
#define NAME_LEN 128

struct names {
    int count;
    char name[MAX_NAMES][NAME_LEN];
};

static const char *nm, *readelf;

/* The words of `command`'s output lines: field `field` (0-based) of each
 * line with at least that many, without an "@version" suffix. */
static int
read_names(const char *command, int field, struct names *out)
{
    char line[1024];
    FILE *p = popen(command, "r");

    out->count = 0;
    if (!p)
        return -1;
    while (fgets(line, sizeof line, p) && out->count < MAX_NAMES) {
        char *word = strtok(line, " \t\n");

        for (int f = 0; word && f < field; f++)
            word = strtok(NULL, " \t\n");
        if (!word)
            continue;
        word[strcspn(word, "@")] = '\0';
        snprintf(out->name[out->count++], NAME_LEN, "%s", word);
    }
    return pclose(p) == 0 ? 0 : -1;
}

static int
has(const struct names *set, const char *name)
{
    for (int i = 0; i < set->count; i++)
        if (strcmp(set->name[i], name) == 0)
            return 1;
    return 0;
}

/* The soname of `path` (readelf -d), or its file name. */
static void
soname_of(const char *path, char *out, size_t cap)
{
    char command[4608], line[1024];
    const char *base = strrchr(path, '/');
    FILE *p;

    snprintf(out, cap, "%s", base ? base + 1 : path);
    snprintf(command, sizeof command, "'%s' -d '%s' 2>/dev/null", readelf,
             path);
    if (!(p = popen(command, "r")))
        return;
    while (fgets(line, sizeof line, p)) {
        char *at = strstr(line, "(SONAME)"), *open, *close;

        if (at && (open = strchr(at, '[')) && (close = strchr(open, ']'))) {
            *close = '\0';
            snprintf(out, cap, "%s", open + 1);
        }
    }
    pclose(p);
}

/* A file name that is a soname: lib*.so.N (no further version). */
static int
soname_file(const char *name)
{
    const char *so = strstr(name, ".so.");

    return strncmp(name, "lib", 3) == 0 && so && so[4] != '\0' &&
           strspn(so + 4, "0123456789") == strlen(so + 4);
}

/* The libraries of the toolkit the classifier must call NVIDIA's. */
static const char *const expected[] = {
    "libcusolver.so", "libcusolverMg.so", "libcusparse.so", "libcufft.so",
    "libcublas.so", "libcublasLt.so", "libcudnn.so", "libcudnn_", "libnccl.so",
    "libcurand.so",
};

static int
is_expected(const char *soname)
{
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++)
        if (strncmp(soname, expected[i], strlen(expected[i])) == 0)
            return 1;
    return 0;
}

int
main(int argc, char **argv)
{
    static struct names exports, imports;
    char command[4608], path[4096], soname[4096];
    int libraries = 0, failed = 0;
    struct dirent *e;
    DIR *dir;

    if (argc != 5) {
        fprintf(stderr, "usage: test_library_imports CUDA_LIB_DIR "
                "LIBAMPSHIM NM READELF\n");
        return 2;
    }
    nm = argv[3];
    readelf = argv[4];
    if (!(dir = opendir(argv[1]))) {
        printf("skipped: no toolkit libraries in %s\n", argv[1]);
        return 77;
    }
    snprintf(command, sizeof command, "'%s' -D --defined-only '%s'", nm,
             argv[2]);
    if (read_names(command, 2, &exports) != 0 || exports.count == 0) {
        printf("FAIL: no exports read from %s\n", argv[2]);
        return 1;
    }
    while ((e = readdir(dir))) {
        int hooks = 0, nvidia;

        if (!soname_file(e->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        soname_of(path, soname, sizeof soname);
        snprintf(command, sizeof command,
                 "'%s' -D --undefined-only '%s' 2>/dev/null", nm, path);
        if (read_names(command, 1, &imports) != 0)
            continue;
        libraries++;
        nvidia = amp_soname_nvidia(soname);
        if (is_expected(soname) && !nvidia) {
            printf("FAIL: %s is not classified as NVIDIA's\n", soname);
            failed = 1;
        }
        for (int i = 0; i < imports.count; i++) {
            /* The GEMM and convolution hooks (dlsym, dlvsym and the
             * runtime's context ends convert nothing). */
            if (!has(&exports, imports.name[i]) ||
                (strncmp(imports.name[i], "cublas", 6) != 0 &&
                 strncmp(imports.name[i], "cudnn", 5) != 0))
                continue;
            if (hooks++ == 0)
                printf("%s imports the shim's", soname);
            printf(" %s", imports.name[i]);
        }
        if (!hooks)
            continue;
        if (nvidia) {
            printf(": library-internal, passed through\n");
        } else if (strncmp(soname, "libnvblas.so", 12) == 0) {
            printf(": NVBLAS's GEMMs are the program's BLAS calls, "
                   "converted like the program's\n");
        } else {
            printf(": FAIL: not classified as NVIDIA's, its calls would "
                   "convert\n");
            failed = 1;
        }
    }
    closedir(dir);
    if (libraries == 0) {
        printf("skipped: no toolkit libraries in %s\n", argv[1]);
        return 77;
    }
    printf("%d libraries read\n", libraries);
    return failed;
}
