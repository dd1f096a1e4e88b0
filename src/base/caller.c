/* The caller of a hook and the real function that serves it: the object
 * of the return address (dladdr1), its soname and DT_NEEDED entries read
 * from its dynamic section in memory, and another release's definition
 * found on the already-loaded release's handle. */
#include "base/caller.h"

#include "base/resolve.h"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- Names ------------------------------------------------------------------- */

/* Each library: its file name stem, whether a stem with "_" after it is
 * one of its parts (cuDNN 9's libcudnn_cnn.so.9), and the release number
 * the shim was built for (the headers' major version). */
static const struct {
    const char *stem;
    int parts;
    const char *release;
    const char *soname;
} amp_libs[AMP_LIB_COUNT] = {
    [AMP_LIB_CUBLAS] = {"libcublas", 0, "13", "libcublas.so.13"},
    [AMP_LIB_CUBLASLT] = {"libcublasLt", 0, "13", "libcublasLt.so.13"},
    [AMP_LIB_CUDNN] = {"libcudnn", 1, "9", "libcudnn.so.9"},
    [AMP_LIB_CUDART] = {"libcudart", 0, "13", "libcudart.so.13"},
};

const char *
amp_lib_soname(enum amp_lib lib)
{
    return (unsigned)lib < AMP_LIB_COUNT ? amp_libs[lib].soname : "";
}

/* name without its directory; *stem_len: the length before ".so" (the
 * whole name when there is none), *release: what follows ".so." up to the
 * next '.' ("" when nothing does), *release_len its length. */
static const char *
amp_name_parts(const char *name, size_t *stem_len, const char **release,
               size_t *release_len)
{
    const char *base = strrchr(name, '/'), *so;

    base = base ? base + 1 : name;
    so = strstr(base, ".so");
    while (so && so[3] != '\0' && so[3] != '.')
        so = strstr(so + 3, ".so");
    *stem_len = so ? (size_t)(so - base) : strlen(base);
    *release = so && so[3] == '.' ? so + 4 : "";
    *release_len = strcspn(*release, ".");
    return base;
}

enum amp_release
amp_lib_release(enum amp_lib lib, const char *name)
{
    const char *base, *release;
    size_t stem_len, release_len, want;

    if ((unsigned)lib >= AMP_LIB_COUNT || !name)
        return AMP_RELEASE_NONE;
    base = amp_name_parts(name, &stem_len, &release, &release_len);
    want = strlen(amp_libs[lib].stem);
    if (stem_len < want || memcmp(base, amp_libs[lib].stem, want) != 0 ||
        (stem_len > want && !(amp_libs[lib].parts && base[want] == '_')))
        return AMP_RELEASE_NONE;
    if (release_len == 0 ||
        (release_len == strlen(amp_libs[lib].release) &&
         memcmp(release, amp_libs[lib].release, release_len) == 0))
        return AMP_RELEASE_OWN;
    return AMP_RELEASE_OTHER;
}

/* NVIDIA's libraries by file name stem: the whole stem, or (with a '*')
 * its beginning. */
static const char *const amp_nvidia_stems[] = {
    "libcublas", "libcublasLt", "libcublasMp", "libcudnn", "libcudnn_*",
    "libcusolver*", "libcusparse*", "libcufft*", "libcurand",
    "libcutensor*", "libcudss", "libnccl", "libnvshmem*", "libnvinfer*",
    "libnvonnxparser", "libnpp*", "libnvjpeg", "libcupti", "libcudart",
    "libcuda",
};

int
amp_soname_nvidia(const char *name)
{
    const char *base, *release;
    size_t stem_len, release_len;

    if (!name)
        return 0;
    base = amp_name_parts(name, &stem_len, &release, &release_len);
    for (size_t i = 0; i < sizeof amp_nvidia_stems / sizeof *amp_nvidia_stems;
         i++) {
        const char *s = amp_nvidia_stems[i];
        size_t n = strcspn(s, "*");

        if (s[n] == '*' ? stem_len >= n && memcmp(base, s, n) == 0
                        : stem_len == n && memcmp(base, s, n) == 0)
            return 1;
    }
    return 0;
}

/* ---- Loaded objects ---------------------------------------------------------- */

/* A pointer of an object's dynamic section: the loader relocates most in
 * place, not those of a read-only section (the vDSO's). */
static uintptr_t
amp_dyn_ptr(const struct link_map *lm, uintptr_t v)
{
    return v < lm->l_addr ? v + lm->l_addr : v;
}

static const char *
amp_dyn_strtab(const struct link_map *lm)
{
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            return (const char *)amp_dyn_ptr(lm, d->d_un.d_ptr);
    return NULL;
}

/* The object's soname, else its file name ("" for the main program). */
static const char *
amp_object_soname(const struct link_map *lm)
{
    const char *strtab = amp_dyn_strtab(lm);

    for (const ElfW(Dyn) *d = lm->l_ld; strtab && d && d->d_tag != DT_NULL;
         d++)
        if (d->d_tag == DT_SONAME)
            return strtab + d->d_un.d_val;
    return lm->l_name ? lm->l_name : "";
}

/* The first library the object depends on (DT_NEEDED) that is a release
 * of lib, or NULL. */
static const char *
amp_object_needs(const struct link_map *lm, enum amp_lib lib)
{
    const char *strtab = amp_dyn_strtab(lm);

    for (const ElfW(Dyn) *d = lm->l_ld; strtab && d && d->d_tag != DT_NULL;
         d++)
        if (d->d_tag == DT_NEEDED &&
            amp_lib_release(lib, strtab + d->d_un.d_val) != AMP_RELEASE_NONE)
            return strtab + d->d_un.d_val;
    return NULL;
}

static const struct link_map *
amp_object_at(const void *p)
{
    struct link_map *lm = NULL;
    Dl_info info;

    if (!p || !dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

const char *
amp_object_soname_at(const void *p)
{
    const struct link_map *lm = amp_object_at(p);

    return lm ? amp_object_soname(lm) : NULL;
}

/* `name` as the loaded release `soname` defines it: in the version node
 * the release names after itself (every export of cuBLAS and cuDNN is
 * versioned so, "cublasSgemm_v2@@libcublas.so.12"), else its default
 * definition. NULL when that release is not loaded or lacks it. Never
 * loads a library: RTLD_NOLOAD finds a loaded object by soname, in a
 * local scope too, and leaves its scope as it is. */
static void *
amp_release_function(const char *soname, const char *name)
{
    void *lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD), *fn;

    if (!lib)
        return NULL;
    amp_real_dl_init();
    fn = amp_real_dlvsym ? amp_real_dlvsym(lib, name, soname) : NULL;
    if (!fn)
        fn = amp_dlsym(lib, name);
    dlclose(lib); /* the program still holds it */
    return fn;
}

static struct amp_route
amp_route_find(enum amp_lib lib, const char *name, const void *ret)
{
    const struct link_map *lm = amp_object_at(ret);
    struct amp_route r = {NULL, 0, 0};
    const char *needed;

    if (!lm)
        return r; /* code of no object (generated): the program's */
    r.library = (unsigned char)amp_soname_nvidia(amp_object_soname(lm));
    needed = amp_object_needs(lm, lib);
    if (needed && amp_lib_release(lib, needed) == AMP_RELEASE_OTHER) {
        r.other = 1;
        r.fn = amp_release_function(needed, name);
    }
    return r;
}

/* ---- Routes, kept per (return address, name) -------------------------------- */

#define AMP_ROUTE_MAX 1024 /* a power of two */

struct amp_route_entry {
    _Atomic uintptr_t ret;  /* 0: free; set last, when the rest is */
    const char *name;
    struct amp_route route;
};

static struct amp_route_entry amp_routes[AMP_ROUTE_MAX];
static pthread_mutex_t amp_route_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t
amp_route_hash(uintptr_t ret, const char *name)
{
    uint64_t h = (uint64_t)ret ^ ((uint64_t)(uintptr_t)name *
                                  0x9e3779b97f4a7c15ull);

    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)h & (AMP_ROUTE_MAX - 1);
}

/* The entry of (ret, name), or with `insert` the free entry where it
 * goes; NULL when neither is found. */
static struct amp_route_entry *
amp_route_probe(uintptr_t ret, const char *name, int insert)
{
    size_t at = amp_route_hash(ret, name);

    for (size_t i = 0; i < AMP_ROUTE_MAX; i++) {
        struct amp_route_entry *e = &amp_routes[(at + i) & (AMP_ROUTE_MAX - 1)];
        uintptr_t k = atomic_load_explicit(&e->ret, memory_order_acquire);

        if (k == 0)
            return insert ? e : NULL;
        if (k == ret && e->name == name)
            return e;
    }
    return NULL;
}

struct amp_route
amp_route(enum amp_lib lib, const char *name, const void *ret)
{
    uintptr_t key = (uintptr_t)ret;
    struct amp_route_entry *e = amp_route_probe(key, name, 0);
    struct amp_route r;

    if (e)
        return e->route;
    /* Outside the lock: the loader's own lock is taken on the way. Two
     * threads that get here at once find the same route. */
    r = amp_route_find(lib, name, ret);
    if (key == 0)
        return r;
    pthread_mutex_lock(&amp_route_lock);
    e = amp_route_probe(key, name, 1);
    if (e && atomic_load_explicit(&e->ret, memory_order_relaxed) == 0) {
        e->name = name;
        e->route = r;
        atomic_store_explicit(&e->ret, key, memory_order_release);
    }
    pthread_mutex_unlock(&amp_route_lock);
    return r; /* a full table: found again at each call */
}

/* ---- Call stacks ------------------------------------------------------------- */

/* Frames one walk reads at most: the shim's own below the hook's return
 * address, then the caller's. */
#define AMP_STACK_WALK 32
/* Return addresses each thread remembers (direct-mapped). */
#define AMP_STACK_CACHE 64

/* Per thread and return address: the index of the return address in the
 * last walk that found it (the shim's frames below it; the same for
 * every call of one hook through one path), or -1 when a walk did not
 * find it (no unwind information on the way): that address then stands
 * alone, unwalked. Per thread, so without a lock. */
static _Thread_local struct {
    const void *ret;
    int at;
} amp_stack_cache[AMP_STACK_CACHE];

/* The index of ret in walk[0..n), or -1. */
static int
amp_stack_find(void *const *walk, int n, const void *ret)
{
    int i;

    for (i = 0; i < n; i++)
        if (walk[i] == ret)
            return i;
    return -1;
}

int
amp_caller_stack(const void *ret, const void **frames, int max)
{
    void *walk[AMP_STACK_WALK];
    size_t c = ((uintptr_t)ret >> 4) % AMP_STACK_CACHE;
    int n, at = -1, i;

    if (max < 1)
        return 0;
    frames[0] = ret;
    if (max == 1 || !ret)
        return 1;
    if (amp_stack_cache[c].ret == ret) {
        at = amp_stack_cache[c].at;
        if (at < 0)
            return 1;
        /* Only as deep as needed: the cached index and the frames
         * above it. */
        n = backtrace(walk, at + max < AMP_STACK_WALK ? at + max
                                                      : AMP_STACK_WALK);
        if (at >= n || walk[at] != ret)
            at = -1;
    }
    if (at < 0) {
        /* First walk from ret, or another path into the hook. */
        n = backtrace(walk, AMP_STACK_WALK);
        at = amp_stack_find(walk, n, ret);
        amp_stack_cache[c].ret = ret;
        amp_stack_cache[c].at = at;
        if (at < 0)
            return 1;
    }
    for (i = 1; i < max && at + i < n; i++)
        frames[i] = walk[at + i];
    return i;
}
