/* The caller of a hook and the real function that serves it: the object
 * of the return address (dladdr1), its soname and DT_NEEDED entries read
 * from its dynamic section in memory, and another release's definition
 * found on the already-loaded release's handle. */
#include "base/caller.h"

#include "base/resolve.h"
#include "base/shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

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

/* The route each thread found last: a hook called again from where it
 * was called before finds it without hashing (routes never change). */
static AMP_THREAD_HOT struct {
    uintptr_t ret;
    const char *name;
    struct amp_route route;
} amp_route_last;

struct amp_route
amp_route(enum amp_lib lib, const char *name, const void *ret)
{
    uintptr_t key = (uintptr_t)ret;
    struct amp_route_entry *e;
    struct amp_route r;

    if (amp_route_last.ret == key && amp_route_last.name == name && key)
        return amp_route_last.route;
    e = amp_route_probe(key, name, 0);
    if (e) {
        amp_route_last.ret = key;
        amp_route_last.name = name;
        amp_route_last.route = e->route;
        return e->route;
    }
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

/* Stacks each thread remembers: AMP_STACK_WAYS per group of return
 * addresses (a wrapper has one stack per layer that calls it). */
#define AMP_STACK_GROUPS 32
#define AMP_STACK_WAYS 8
#define AMP_STACK_MAX 4

/* Per thread: a return address, the stack of a walk from it, and where
 * each of its return addresses lay in memory (the word below the CFA of
 * the frame it returns from: x86-64's call pushes it there), for a call
 * at one depth in the shim (the address of a local of amp_caller_stack).
 * A later call at that depth whose slots still hold those addresses has
 * that stack: the first frame that differed would hold another return
 * address in its slot, which lies where the frames below it (the same
 * functions) put it. Per thread, so without a lock. */
struct amp_stack_memo {
    const void *ret;
    uintptr_t at;                  /* the local's address */
    int n;                         /* frames; 0: unused */
    int slotted;                   /* the slots held the frames */
    const void *frames[AMP_STACK_MAX];
    uintptr_t slots[AMP_STACK_MAX];
};
static AMP_THREAD_HOT struct amp_stack_group {
    struct amp_stack_memo way[AMP_STACK_WAYS];
    unsigned next;                 /* the way a new stack replaces */
    unsigned last;                 /* the way found last: looked at first */
} amp_stack_memos[AMP_STACK_GROUPS];

/* One walk's state: frames from ret up. */
struct amp_stack_walk {
    struct amp_stack_memo *m;
    int max;
};

/* Each frame's return address, and its slot: the word below the CFA
 * the context gives with it (the called frame's, where x86-64's call
 * pushed it; amp_stack_slots_hold checks it). */
static _Unwind_Reason_Code
amp_stack_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct amp_stack_walk *w = arg;
    uintptr_t ip = _Unwind_GetIP(ctx);

    if (w->m->n > 0 || ip == (uintptr_t)w->m->ret) {
        w->m->frames[w->m->n] = (const void *)ip;
        w->m->slots[w->m->n] = _Unwind_GetCFA(ctx) - sizeof(void *);
        if (++w->m->n == w->max)
            return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

/* 1 when every slot of m holds its frame. */
static inline int
amp_stack_slots_hold(const struct amp_stack_memo *m)
{
    int i;

    for (i = 0; i < m->n; i++)
        if (*(const void *const *)m->slots[i] != m->frames[i])
            return 0;
    return 1;
}

/* A stack not remembered at this depth: walked from ret into a way of g
 * (apart from amp_caller_stack, whose look-up then needs few registers). */
static __attribute__((noinline)) struct amp_stack_memo *
amp_stack_walk_new(struct amp_stack_group *g, const void *ret, uintptr_t at,
                   int max)
{
    struct amp_stack_memo *m = &g->way[g->next++ % AMP_STACK_WAYS];
    struct amp_stack_walk w;

    /* The first call of this stack at this depth, or slots that do not
     * hold return addresses (another ABI: then every call walks). */
    m->ret = ret;
    m->at = at;
    m->n = 0;
    w.m = m;
    w.max = max;
    _Unwind_Backtrace(amp_stack_frame, &w);
    if (m->n == 0) {
        m->frames[m->n++] = ret; /* no unwind information to it */
        m->slotted = 0;
    } else {
        m->slotted = amp_stack_slots_hold(m);
    }
    return m;
}

/* The stack memo for ret at depth `at` whose slots hold its frames. */
static inline __attribute__((always_inline)) int
amp_stack_memo_holds(const struct amp_stack_memo *k, const void *ret,
                     uintptr_t at)
{
    return k->ret == ret && k->at == at && k->n > 0 &&
           (k->slotted ? amp_stack_slots_hold(k) : k->n == 1);
}

/* amp_caller_stack's and amp_caller_stack_hinted's look-up: `at` is the
 * address of a local of theirs, which marks the depth of the call. */
static inline int
amp_stack_of(const void *ret, const void **frames, int max, uintptr_t at,
             const void **hint)
{
    struct amp_stack_group *g;
    struct amp_stack_memo *m = NULL;
    unsigned i;
    int n;

    if (max < 1)
        return 0;
    frames[0] = ret;
    if (max == 1 || !ret)
        return 1;
    if (max > AMP_STACK_MAX)
        max = AMP_STACK_MAX;
    if (hint && *hint &&
        amp_stack_memo_holds((const struct amp_stack_memo *)*hint, ret, at))
        m = (struct amp_stack_memo *)*hint;
    if (!m) {
        g = &amp_stack_memos[((uintptr_t)ret >> 4) % AMP_STACK_GROUPS];
        /* The thread's group, found once: not looked up at each use. */
        __asm__("" : "+r"(g));
        for (i = 0; i < AMP_STACK_WAYS; i++) {
            unsigned way = (g->last + i) % AMP_STACK_WAYS;

            if (amp_stack_memo_holds(&g->way[way], ret, at)) {
                m = &g->way[way];
                g->last = way;
                break;
            }
        }
        if (!m)
            m = amp_stack_walk_new(g, ret, at, max);
        if (hint)
            *hint = m;
    }
    for (n = 1; n < m->n && n < max; n++)
        frames[n] = m->frames[n];
    return n;
}

int
amp_caller_stack(const void *ret, const void **frames, int max)
{
    volatile char here = 0;

    return amp_stack_of(ret, frames, max, (uintptr_t)&here, NULL);
}

int
amp_caller_stack_hinted(const void *ret, const void **frames, int max,
                        const void **hint)
{
    volatile char here = 0;

    return amp_stack_of(ret, frames, max, (uintptr_t)&here, hint);
}
