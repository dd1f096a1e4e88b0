/* What `ampshim run` and `calibrate` check before a program starts: the
 * settings, the program, the library and the files the shim will write,
 * so that a mistake costs no run. */
#include "base/config.h"
#include "base/path.h"
#include "tool/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AMP_INSTALL_LIBDIR
#define AMP_INSTALL_LIBDIR "/usr/local/lib"
#endif

/* The directory part of path ("." for none) into out. */
static void
amp_check_dirname(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* 0 when files can be created in dir; else -1 with why. */
static int
amp_check_dir(const char *dir, char *why, size_t cap)
{
    struct stat st;

    if (stat(dir, &st) != 0) {
        snprintf(why, cap, "the directory %s %s", dir,
                 errno == ENOENT ? "does not exist" : strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%s is not a directory", dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, cap, "cannot create files in %s: %s", dir,
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* amp_tool_check_file, for a path whose existence can be known or not
 * (a process id in its name). */
static int
amp_check_file(const char *command, const char *label, const char *path,
               enum amp_output_kind kind, int unknowable)
{
    char dir[PATH_MAX + 64], why[PATH_MAX + 200];
    struct stat st;

    if (kind == AMP_OUTPUT_DIRECTORY)
        snprintf(dir, sizeof dir, "%s", path);
    else
        amp_check_dirname(path, dir, sizeof dir);
    if (amp_check_dir(dir, why, sizeof why) != 0) {
        fprintf(stderr, "%s: %s: %s\n", command, label, why);
        return -1;
    }
    if (kind == AMP_OUTPUT_DIRECTORY || unknowable || lstat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s: %s is a directory\n", command, label, path);
        return -1;
    }
    if (kind == AMP_OUTPUT_NEW) {
        fprintf(stderr, "%s: %s: %s exists; --force replaces it\n", command,
                label, path);
        return -1;
    }
    return 0;
}

int
amp_tool_check_file(const char *command, const char *label,
                    const char *path, enum amp_output_kind kind)
{
    return amp_check_file(command, label, path, kind, 0);
}

int
amp_tool_check_output(const char *command, const char *label,
                      const char *pattern, enum amp_output_kind kind)
{
    char path[PATH_MAX + 64];

    if (amp_path_expand(pattern, (long)getpid(), path, sizeof path) !=
        AMP_OK) {
        fprintf(stderr, "%s: %s: too long once expanded\n", command, label);
        return -1;
    }
    return amp_check_file(command, label, path, kind,
                          amp_path_has_pid(pattern));
}

int
amp_tool_remove_output(const char *command, const char *pattern)
{
    char path[PATH_MAX + 64];

    if (amp_path_has_pid(pattern) ||
        amp_path_expand(pattern, (long)getpid(), path, sizeof path) !=
            AMP_OK ||
        unlink(path) == 0 || errno == ENOENT)
        return 0;
    fprintf(stderr, "%s: cannot remove %s: %s; nothing ran\n", command, path,
            strerror(errno));
    return -1;
}

static const char *
amp_check_getenv(const char *name)
{
    return getenv(name);
}

int
amp_tool_check_settings(const char *command)
{
    static struct amp_config cfg;
    int i;

    amp_config_load(&cfg, amp_check_getenv);
    for (i = 0; i < cfg.nproblems; i++) {
        /* Without what the shim would do instead ("; ignored"): here
         * nothing runs. */
        const char *end = strrchr(cfg.problems[i], ';');
        int len = end ? (int)(end - cfg.problems[i])
                      : (int)strlen(cfg.problems[i]);

        fprintf(stderr, "%s: %.*s\n", command, len, cfg.problems[i]);
    }
    return cfg.nproblems ? -1 : 0;
}

/* 0 when path is a file this process may execute; else -1, errno set. */
static int
amp_check_executable(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        errno = EACCES;
        return -1;
    }
    return access(path, X_OK);
}

/* execvp's search: each PATH entry (an empty one is the working
 * directory), EACCES when a file was found but none could be run. */
static int
amp_check_search(const char *program, char *out, size_t cap)
{
    const char *path = getenv("PATH"), *at;
    int denied = 0;

    if (!path)
        path = "/bin:/usr/bin";
    for (at = path;; at += strcspn(at, ":") + 1) {
        int len = (int)strcspn(at, ":");

        if (len == 0)
            snprintf(out, cap, "%s", program);
        else
            snprintf(out, cap, "%.*s/%s", len, at, program);
        if (amp_check_executable(out) == 0)
            return 0;
        denied |= errno == EACCES;
        if (!at[len])
            break;
    }
    errno = denied ? EACCES : ENOENT;
    return -1;
}

int
amp_tool_locate_program(const char *program, char *out, size_t cap)
{
    if (!*program) {
        errno = ENOENT;
        return -1;
    }
    if (strchr(program, '/')) {
        snprintf(out, cap, "%s", program);
        return amp_check_executable(out);
    }
    return amp_check_search(program, out, cap);
}

int
amp_tool_find_program(const char *program, char *out, size_t cap)
{
    int rc = amp_tool_locate_program(program, out, cap);

    if (rc != 0)
        fprintf(stderr, "ampshim: cannot run %s: %s; nothing ran\n", program,
                strerror(errno));
    return rc;
}

/* The library's place without AMPSHIM_LIBRARY: next to the tool, then
 * ../hooks from it; 0, or -1. */
static int
amp_check_library_near(char *out)
{
    const char *const places[] = {"/libampshim.so", "/../hooks/libampshim.so",
                                  NULL};
    char self[PATH_MAX], *slash;
    ssize_t n;
    int i;

    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    for (i = 0; places[i]; i++) {
        char candidate[PATH_MAX + 64];

        snprintf(candidate, sizeof candidate, "%s%s", self, places[i]);
        if (access(candidate, R_OK) == 0 && realpath(candidate, out) != NULL)
            return 0;
    }
    return -1;
}

int
amp_tool_library(char *out, size_t cap)
{
    const char *env = getenv("AMPSHIM_LIBRARY");
    char near[PATH_MAX];

    if (env && *env)
        snprintf(out, cap, "%s", env);
    else if (amp_check_library_near(near) == 0)
        snprintf(out, cap, "%s", near);
    else
        snprintf(out, cap, "%s/libampshim.so", AMP_INSTALL_LIBDIR);
    if (access(out, R_OK) == 0)
        return 0;
    fprintf(stderr, "ampshim: cannot find libampshim.so (%s); set "
            "AMPSHIM_LIBRARY\n", out);
    return -1;
}

/* ---- Statically linked vendor libraries ---------------------------------- */

/* The libraries a program may hold a static copy of, by their functions'
 * prefix (cuBLASLt's before cuBLAS's, which it extends). */
static const struct {
    const char *prefix, *name, *link;
} amp_static_vendors[] = {
    {"cublasLt", "cuBLASLt", "-lcublasLt"},
    {"cublas", "cuBLAS", "-lcublas"},
    {"cudnn", "cuDNN", "-lcudnn"},
};

#define AMP_STATIC_VENDORS                                                   \
    (sizeof amp_static_vendors / sizeof *amp_static_vendors)

/* The vendor whose function `name` is (prefix, then an upper-case
 * letter: every function the libraries export is so named, while a
 * program's own helper may be cublas_failed), or -1. */
static int
amp_static_vendor_of(const char *name)
{
    for (size_t v = 0; v < AMP_STATIC_VENDORS; v++) {
        size_t n = strlen(amp_static_vendors[v].prefix);

        if (strncmp(name, amp_static_vendors[v].prefix, n) == 0 &&
            name[n] >= 'A' && name[n] <= 'Z')
            return (int)v;
    }
    return -1;
}

int
amp_tool_warn_static(const char *command, const char *program)
{
    size_t count[AMP_STATIC_VENDORS] = {0};
    char example[AMP_STATIC_VENDORS][128] = {{0}};
    Elf_Scn *scn = NULL;
    Elf *elf;
    int fd, warned = 0;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return 0;
    fd = open(program, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    elf = elf_begin(fd, ELF_C_READ, NULL);
    while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        Elf_Data *data;

        if (!gelf_getshdr(scn, &sh) ||
            (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
            sh.sh_entsize == 0 || !(data = elf_getdata(scn, NULL)))
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *name;
            int v;

            if (!gelf_getsym(data, (int)i, &sym) ||
                sym.st_shndx == SHN_UNDEF ||
                GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
                !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
                (v = amp_static_vendor_of(name)) < 0)
                continue;
            /* .symtab and .dynsym may both list a function. */
            if (sh.sh_type == SHT_DYNSYM && count[v] > 0)
                continue;
            if (count[v]++ == 0)
                snprintf(example[v], sizeof example[v], "%s", name);
        }
    }
    if (elf)
        elf_end(elf);
    close(fd);
    for (size_t v = 0; v < AMP_STATIC_VENDORS; v++) {
        char which[448];

        if (count[v] == 0)
            continue;
        if (count[v] == 1)
            snprintf(which, sizeof which, "%s is defined", example[v]);
        else
            snprintf(which, sizeof which, "%s and %zu more of its functions "
                     "are defined", example[v], count[v] - 1);
        fprintf(stderr, "%s: warning: %s has %s linked in statically (%s in "
                "the program): the shim cannot replace those calls, which "
                "stay FP32 and are not counted; link the shared library (%s) "
                "to have them converted\n", command, program,
                amp_static_vendors[v].name, which, amp_static_vendors[v].link);
        warned++;
    }
    return warned;
}
