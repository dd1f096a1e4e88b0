/* The emulated device's core: device memory the host cannot touch, contexts,
 * per-stream queues of deferred work with a modelled clock, and fault
 * injection. Exported to the other stand-ins through emu.h. */
#include "core_state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* Device address space reserved up front; halved until the kernel gives it. */
#define CORE_SPAN_MAX ((size_t)1 << 38)
#define CORE_SPAN_MIN ((size_t)1 << 30)

struct core_alloc_rec {
    CUdeviceptr base;
    size_t size;                /* bytes asked for */
    size_t span;                /* bytes reserved (aligned) */
    size_t place;               /* offset of its first page in the span */
    size_t pages;               /* bytes of its pages, the guard page after
                                 * them not counted */
    int dev;
    int is_host;                /* page-locked host memory (cuMemAllocHost) */
    int async;                  /* from cuMemAllocAsync */
    int freeing;                /* a stream-ordered free is queued */
    int kept;                   /* freed in stream order, its pages kept
                                 * for the next stream-ordered allocation
                                 * (core_free_keep): no allocation's */
    unsigned long long kept_seq;    /* when it was kept: oldest goes first */
    struct CUctx_st *ctx;
};

static struct {
    pthread_mutex_t lock;
    int initialised;
    int ndev;
    struct CUctx_st *primary[CORE_MAX_DEVICES];
    struct CUctx_st *ctxs;      /* every live context, primaries first */
    size_t used[CORE_MAX_DEVICES];
    unsigned char *dev_base;    /* PROT_NONE: the addresses handed out */
    unsigned char *rw_base;     /* read-write alias at the same offsets */
    int fd;                     /* the memory file both views map */
    size_t span;
    size_t cursor;              /* next-fit start, delays address reuse */
    struct core_alloc_rec *allocs;  /* sorted by base */
    size_t nallocs, cap;
    struct core_vc host_vc;     /* the work the host has waited for */
    struct core_writer {        /* per page of the span: its last writer */
        unsigned long long stream;
        uint64_t seq;
    } *writers;
    int race_said;              /* the unordered-access line was printed */
    size_t nkept, kept_bytes;   /* records kept (core_free_keep) */
    unsigned long long kept_seq;
    int lock_depth;             /* this thread's nested core_lock calls */
} g;

static void core_window_settle(void);
static void core_window_release(size_t place, size_t bytes);
static void core_window_forget(void);

static pthread_once_t core_lock_once = PTHREAD_ONCE_INIT;

static __thread struct CUctx_st *tls_stack[CORE_CTX_STACK];
static __thread int tls_depth;

static void
core_lock_init(void)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    /* Recursive: op callbacks and synchronous copies call emu_dev_at()
     * with the lock already held. */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g.lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

void
core_lock(void)
{
    pthread_once(&core_lock_once, core_lock_init);
    pthread_mutex_lock(&g.lock);
    g.lock_depth++;
}

/* The outermost unlock returns to the program's own code: the device
 * window's pages that kernels left open close first (core_window_settle),
 * so that the host faults on every device address again. */
void
core_unlock(void)
{
    if (--g.lock_depth == 0)
        core_window_settle();
    pthread_mutex_unlock(&g.lock);
}

static size_t
core_page(void)
{
    static size_t page;

    if (!page)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

/* ---- Vector clocks: which ops come before which ----------------------------- */

static uint64_t
core_vc_get(const struct core_vc *vc, unsigned long long stream)
{
    for (int i = 0; i < vc->n; i++)
        if (vc->e[i].stream == stream)
            return vc->e[i].seq;
    return 0;
}

/* Raises vc's entry for stream to at least seq: 0, or -1 out of memory. */
static int
core_vc_raise(struct core_vc *vc, unsigned long long stream, uint64_t seq)
{
    for (int i = 0; i < vc->n; i++) {
        if (vc->e[i].stream == stream) {
            if (vc->e[i].seq < seq)
                vc->e[i].seq = seq;
            return 0;
        }
    }
    if (vc->n == vc->cap) {
        int cap = vc->cap ? vc->cap * 2 : 4;
        struct core_vc_entry *e = realloc(vc->e, (size_t)cap * sizeof(*e));

        if (!e)
            return -1;
        vc->e = e;
        vc->cap = cap;
    }
    vc->e[vc->n].stream = stream;
    vc->e[vc->n++].seq = seq;
    return 0;
}

static int
core_vc_merge(struct core_vc *to, const struct core_vc *from)
{
    for (int i = 0; i < from->n; i++)
        if (core_vc_raise(to, from->e[i].stream, from->e[i].seq) != 0)
            return -1;
    return 0;
}

/* A stream that is gone no longer matters to what the host waited for. */
static void
core_vc_drop(struct core_vc *vc, unsigned long long stream)
{
    for (int i = 0; i < vc->n; i++) {
        if (vc->e[i].stream == stream) {
            vc->e[i] = vc->e[--vc->n];
            return;
        }
    }
}

/* The host waited for the op of mark m, and so for all that came before. */
static void
core_host_waited(const struct core_mark *m)
{
    /* Out of memory the host forgets an order: at worst a line too many. */
    if (m)
        (void)core_vc_merge(&g.host_vc, &m->vc);
}

/* ---- Initialisation ------------------------------------------------------ */

static int
core_read_device_count(void)
{
    const char *s = secure_getenv("AMPSHIM_EMU_DEVICES");
    char *end;
    long n;

    if (!s || !*s)
        return 1;
    errno = 0;
    n = strtol(s, &end, 10);
    if (errno || *end || n < 1 || n > CORE_MAX_DEVICES) {
        fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_DEVICES=%s is not a device "
                "count (accepted: 1 to %d); using 1\n", s, CORE_MAX_DEVICES);
        return 1;
    }
    return (int)n;
}

/* Device memory is one sparse memory file mapped twice: PROT_NONE at the
 * addresses handed out (a kernel's pages open there, core_window_open) and
 * read-write at the alias the emulator's own code uses. Both views are the
 * same pages, so a page opens and closes without a copy. */
static int
core_map_file(size_t span, int *fd_out, void **dev_out, void **rw_out)
{
    int fd = (int)syscall(SYS_memfd_create, "ampshim-emu-device", 1u);
    void *dev = MAP_FAILED, *rw = MAP_FAILED;

    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)span) == 0) {
        dev = mmap(NULL, span, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        rw = mmap(NULL, span, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_NORESERVE, fd, 0);
    }
    if (dev == MAP_FAILED || rw == MAP_FAILED) {
        if (dev != MAP_FAILED)
            munmap(dev, span);
        if (rw != MAP_FAILED)
            munmap(rw, span);
        close(fd);
        return -1;
    }
    *fd_out = fd;
    *dev_out = dev;
    *rw_out = rw;
    return 0;
}

/* A child of fork() gets device memory of its own, a copy of the
 * parent's, as with private memory: the two processes would otherwise
 * share one file. Runs in the child, before fork() returns there. */
static void
core_fork_child(void)
{
    int fd;
    void *dev, *rw;

    if (!g.dev_base || core_map_file(g.span, &fd, &dev, &rw) != 0)
        return;
    for (size_t i = 0; i < g.nallocs; i++)
        if (!g.allocs[i].is_host)
            memcpy((unsigned char *)rw + g.allocs[i].place,
                   g.rw_base + g.allocs[i].place, g.allocs[i].pages);
    munmap(dev, g.span);
    munmap(rw, g.span);
    /* The new file at the old addresses, so that every pointer the
     * parent handed out stays valid. */
    mmap(g.dev_base, g.span, PROT_NONE, MAP_SHARED | MAP_NORESERVE | MAP_FIXED,
         fd, 0);
    mmap(g.rw_base, g.span, PROT_READ | PROT_WRITE,
         MAP_SHARED | MAP_NORESERVE | MAP_FIXED, fd, 0);
    close(g.fd);
    g.fd = fd;
    core_window_forget();
}

/* The span is a file's size: within the process's file size limit, past
 * which ftruncate would raise SIGXFSZ and end the process. */
static int
core_map_span(void)
{
    struct rlimit fsize;

    if (getrlimit(RLIMIT_FSIZE, &fsize) != 0)
        fsize.rlim_cur = RLIM_INFINITY;
    for (size_t span = CORE_SPAN_MAX; span >= CORE_SPAN_MIN; span /= 2) {
        void *dev, *rw;
        int fd;

        if ((fsize.rlim_cur != RLIM_INFINITY && span > fsize.rlim_cur) ||
            core_map_file(span, &fd, &dev, &rw) != 0)
            continue;
        g.fd = fd;
        g.dev_base = dev;
        g.rw_base = rw;
        g.span = span;
        pthread_atfork(NULL, NULL, core_fork_child);
        return 0;
    }
    fprintf(stderr, "ampshim-emu: cannot reserve device memory (a memory "
            "file of %zu MiB at least, mapped twice%s); cuInit fails with "
            "CUDA_ERROR_OUT_OF_MEMORY\n", (size_t)CORE_SPAN_MIN >> 20,
            fsize.rlim_cur != RLIM_INFINITY && fsize.rlim_cur < CORE_SPAN_MIN
                ? ": the file size limit, ulimit -f, is below it"
                : "");
    return -1;
}

static struct CUctx_st *
core_ctx_new(int dev, int primary)
{
    struct CUctx_st *ctx = calloc(1, sizeof(*ctx));
    struct CUctx_st **tail;

    if (!ctx)
        return NULL;
    ctx->dev = dev;
    ctx->primary = primary;
    for (tail = &g.ctxs; *tail; tail = &(*tail)->next)
        ;
    *tail = ctx;
    return ctx;
}

/* Caller holds the lock. */
CUresult
core_init(void)
{
    int i;

    if (g.initialised)
        return CUDA_SUCCESS;
    (void)core_gpu_spec();
    if (core_map_span() != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g.ndev = core_read_device_count();
    for (i = 0; i < g.ndev; i++) {
        g.primary[i] = core_ctx_new(i, 1);
        if (!g.primary[i])
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g.initialised = 1;
    return CUDA_SUCCESS;
}

int
core_initialised(void)
{
    return g.initialised;
}

int
core_device_count(void)
{
    return g.ndev;
}

/* ---- Current context ------------------------------------------------------ */

struct CUctx_st *
core_tls_current(void)
{
    return tls_depth > 0 ? tls_stack[tls_depth - 1] : NULL;
}

CUresult
core_tls_set_current(struct CUctx_st *ctx)
{
    /* Replaces the top of the stack; NULL pops it. */
    if (tls_depth == 0) {
        if (ctx)
            tls_stack[tls_depth++] = ctx;
    } else if (!ctx) {
        tls_depth--;
    } else {
        tls_stack[tls_depth - 1] = ctx;
    }
    return CUDA_SUCCESS;
}

CUresult
core_tls_push(struct CUctx_st *ctx)
{
    if (tls_depth == CORE_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tls_stack[tls_depth++] = ctx;
    return CUDA_SUCCESS;
}

struct CUctx_st *
core_tls_pop(void)
{
    return tls_depth > 0 ? tls_stack[--tls_depth] : NULL;
}

int
core_ctx_valid(struct CUctx_st *ctx)
{
    struct CUctx_st *c;

    for (c = g.ctxs; c; c = c->next)
        if (c == ctx)
            return 1;
    return 0;
}

CUresult
core_enter(struct CUctx_st **out, int sticky)
{
    struct CUctx_st *ctx;

    if (!g.initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    ctx = core_tls_current();
    if (!ctx || !core_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx->active)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (sticky && ctx->sticky != CUDA_SUCCESS)
        return ctx->sticky;
    *out = ctx;
    return CUDA_SUCCESS;
}

struct CUctx_st *
core_primary(int dev)
{
    if (dev < 0 || dev >= g.ndev)
        return NULL;
    return g.primary[dev];
}

/* The next context or stream id: unique for the life of the process, as
 * cuCtxGetId and cuStreamGetId promise (a primary context reset and made
 * again at the same address gets a new one). Lock held. */
static unsigned long long
core_next_id(void)
{
    static unsigned long long last;

    return ++last;
}

static CUresult
core_ctx_activate(struct CUctx_st *ctx, unsigned flags)
{
    struct CUstream_st *legacy = calloc(1, sizeof(*legacy));

    if (!legacy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    legacy->ctx = ctx;
    legacy->id = core_next_id();
    legacy->kind = CORE_STREAM_LEGACY;
    ctx->legacy = legacy;
    ctx->streams = legacy;
    ctx->id = core_next_id();
    ctx->flags = flags;
    ctx->sticky = CUDA_SUCCESS;
    ctx->active = 1;
    return CUDA_SUCCESS;
}

/* Gives the pages of a freed device allocation back to the kernel (no
 * other allocation shares them), so that a long run of allocations at
 * fresh addresses does not keep growing the process. */
static void
core_release_pages(size_t i)
{
    const struct core_alloc_rec *r = &g.allocs[i];

    fallocate(g.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
              (off_t)r->place, (off_t)r->pages);
}

/* Forgets the last writers of device allocation r's pages: its memory is
 * no one's now. */
static void
core_writers_forget(const struct core_alloc_rec *r)
{
    if (g.writers)
        memset(&g.writers[r->place / core_page()], 0,
               r->pages / core_page() * sizeof(g.writers[0]));
}

static void
core_alloc_remove(size_t i)
{
    struct core_alloc_rec *r = &g.allocs[i];

    if (r->is_host) {
        free((void *)(uintptr_t)r->base);
    } else {
        core_window_release(r->place, r->pages);
        core_release_pages(i);
        core_writers_forget(r);
        if (r->kept) {
            g.nkept--;
            g.kept_bytes -= r->pages;
        } else {
            g.used[r->dev] -= r->span;
        }
    }
    memmove(&g.allocs[i], &g.allocs[i + 1],
            (g.nallocs - i - 1) * sizeof(g.allocs[0]));
    g.nallocs--;
}

void
core_module_free(struct CUmod_st *m)
{
    while (m->funcs) {
        struct CUfunc_st *f = m->funcs;

        m->funcs = f->next;
        free(f);
    }
    free(m);
}

/* Runs what is queued, then frees everything the context owns. */
static void
core_ctx_teardown(struct CUctx_st *ctx)
{
    size_t i;

    if (!ctx->active)
        return;
    core_sync_ctx(ctx);
    while (ctx->streams) {
        struct CUstream_st *s = ctx->streams;

        ctx->streams = s->next;
        core_vc_drop(&g.host_vc, s->id);
        core_mark_put(s->last);
        free(s);
    }
    while (ctx->events) {
        struct CUevent_st *e = ctx->events;

        ctx->events = e->next;
        core_mark_put(e->mark);
        free(e);
    }
    while (ctx->modules) {
        struct CUmod_st *m = ctx->modules;

        ctx->modules = m->next;
        core_module_free(m);
    }
    while (ctx->graphs) {
        struct CUgraph_st *gr = ctx->graphs;

        ctx->graphs = gr->next;
        core_graph_drop(gr);
    }
    while (ctx->execs) {
        struct CUgraphExec_st *x = ctx->execs;

        ctx->execs = x->next;
        core_oplist_put(x->list);
        free(x);
    }
    for (i = g.nallocs; i-- > 0;)
        if (g.allocs[i].ctx == ctx)
            core_alloc_remove(i);
    ctx->legacy = NULL;
    ctx->active = 0;
    ctx->sticky = CUDA_SUCCESS;
}

CUresult
core_primary_retain(int dev, struct CUctx_st **out)
{
    struct CUctx_st *ctx = core_primary(dev);
    CUresult rc;

    if (!ctx)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!ctx->active) {
        rc = core_ctx_activate(ctx, ctx->flags);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    ctx->refs++;
    *out = ctx;
    return CUDA_SUCCESS;
}

CUresult
core_primary_release(int dev)
{
    struct CUctx_st *ctx = core_primary(dev);

    if (!ctx)
        return CUDA_ERROR_INVALID_DEVICE;
    if (ctx->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--ctx->refs == 0)
        core_ctx_teardown(ctx);
    return CUDA_SUCCESS;
}

CUresult
core_primary_reset(int dev)
{
    struct CUctx_st *ctx = core_primary(dev);

    if (!ctx)
        return CUDA_ERROR_INVALID_DEVICE;
    core_ctx_teardown(ctx);
    ctx->refs = 0;
    return CUDA_SUCCESS;
}

CUresult
core_ctx_create(int dev, unsigned flags, struct CUctx_st **out)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (dev < 0 || dev >= g.ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    ctx = core_ctx_new(dev, 0);
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = core_ctx_activate(ctx, flags);
    if (rc != CUDA_SUCCESS) {
        core_ctx_destroy(ctx);
        return rc;
    }
    ctx->refs = 1;
    *out = ctx;
    return CUDA_SUCCESS;
}

CUresult
core_ctx_destroy(struct CUctx_st *ctx)
{
    struct CUctx_st **pp;
    int i;

    if (!core_ctx_valid(ctx) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    core_ctx_teardown(ctx);
    for (pp = &g.ctxs; *pp; pp = &(*pp)->next) {
        if (*pp == ctx) {
            *pp = ctx->next;
            break;
        }
    }
    /* The calling thread's stack forgets it; other threads find it gone. */
    for (i = 0; i < tls_depth; i++)
        if (tls_stack[i] == ctx)
            tls_stack[i] = NULL;
    free(ctx);
    return CUDA_SUCCESS;
}

/* ---- Accesses with no order between them ---------------------------------- */

/* CUDA orders the work of two streams only by an event wait or by the host
 * waiting for the first (Programming Guide, "Streams" and "Explicit
 * Synchronization"): a kernel that reads what another stream's work wrote
 * with neither between them may run before or after the write on a GPU.
 * The emulator runs work in the order it was queued (core_run_until), the
 * order a GPU that keeps up with its host shows, and names the first such
 * access it meets, on stderr, once. Pages are the unit: each allocation
 * has pages of its own. Kernels' accesses are the pages they touch,
 * copies' and memsets' their ranges; the libraries' ops are not followed. */

/* The op whose run() is running (core_run_one). */
static struct core_qop *core_running_q;

/* Whether a stream with this id still exists in some context. */
static int
core_stream_live(unsigned long long id)
{
    for (struct CUctx_st *c = g.ctxs; c; c = c->next)
        for (struct CUstream_st *t = c->streams; t; t = t->next)
            if (t->id == id && !t->destroyed)
                return 1;
    return 0;
}

static void
core_note_page(size_t pg, int writes)
{
    const struct core_qop *q = core_running_q;
    const struct core_writer *w;

    if (!q || g.race_said)
        return;
    if (!g.writers) {
        void *t = mmap(NULL, g.span / core_page() * sizeof(*g.writers),
                       PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        if (t == MAP_FAILED) {
            g.race_said = 1;        /* no table, no check */
            return;
        }
        g.writers = t;
    }
    w = &g.writers[pg];
    if (w->stream && w->stream != q->mark->stream->id &&
        core_vc_get(&q->mark->vc, w->stream) < w->seq &&
        core_stream_live(w->stream)) {
        fprintf(stderr, "ampshim-emu: %s on stream %llu uses device memory "
                "that stream %llu wrote with nothing ordering the two (an "
                "event wait or a synchronisation): a GPU may run them in "
                "either order (said once)\n", q->op.name,
                q->mark->stream->id, w->stream);
        g.race_said = 1;
        return;
    }
    if (writes) {
        g.writers[pg].stream = q->mark->stream->id;
        g.writers[pg].seq = q->seq;
    }
}

static void
core_note_access(uintptr_t p, size_t bytes, int writes)
{
    uintptr_t dev0 = (uintptr_t)g.dev_base;
    size_t page = core_page();

    if (bytes == 0 || p < dev0 || p - dev0 >= g.span)
        return;
    for (size_t pg = (p - dev0) / page; pg <= (p - dev0 + bytes - 1) / page;
         pg++)
        core_note_page(pg, writes);
}

/* ---- Memory ---------------------------------------------------------------- */

/* Index of the allocation containing p, or -1. */
static long
core_find_index(CUdeviceptr p)
{
    size_t lo = 0, hi = g.nallocs;

    /* Last allocation with base <= p. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (g.allocs[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    lo--;
    if (p - g.allocs[lo].base < g.allocs[lo].size && !g.allocs[lo].kept)
        return (long)lo;
    return -1;
}

int
core_find(CUdeviceptr p, CUdeviceptr *base, size_t *size, int *dev,
          int *is_host, struct CUctx_st **ctx)
{
    long i = core_find_index(p);

    if (i < 0)
        return 0;
    if (base)
        *base = g.allocs[i].base;
    if (size)
        *size = g.allocs[i].size;
    if (dev)
        *dev = g.allocs[i].dev;
    if (is_host)
        *is_host = g.allocs[i].is_host;
    if (ctx)
        *ctx = g.allocs[i].ctx;
    return 1;
}

static int
core_insert(const struct core_alloc_rec *rec)
{
    size_t i = 0;

    if (g.nallocs == g.cap) {
        size_t cap = g.cap ? g.cap * 2 : 64;
        struct core_alloc_rec *a = realloc(g.allocs, cap * sizeof(*a));

        if (!a)
            return -1;
        g.allocs = a;
        g.cap = cap;
    }
    while (i < g.nallocs && g.allocs[i].base < rec->base)
        i++;
    memmove(&g.allocs[i + 1], &g.allocs[i],
            (g.nallocs - i) * sizeof(g.allocs[0]));
    g.allocs[i] = *rec;
    g.nallocs++;
    return 0;
}

/* A free gap of `need` bytes in the device span at or after `from`. */
static int
core_find_gap(size_t need, size_t from, size_t *off)
{
    uintptr_t dev0 = (uintptr_t)g.dev_base;
    size_t pos = from, i;

    for (i = 0; i < g.nallocs; i++) {
        const struct core_alloc_rec *r = &g.allocs[i];
        size_t b, e;

        if (r->is_host || r->base < dev0 || r->base >= dev0 + g.span)
            continue;
        b = r->place;
        e = b + r->pages + core_page();
        if (e <= pos)
            continue;
        if (b >= pos && b - pos >= need) {
            *off = pos;
            return 0;
        }
        pos = e;
    }
    if (pos <= g.span && g.span - pos >= need) {
        *off = pos;
        return 0;
    }
    return -1;
}

/* Maps an allocation's pages [off, off + pages) of the span in both views
 * before its first use: the read-write alias before the fill below, and
 * the device addresses with no access rights again, so that a kernel's
 * first touch of a page costs the window's fault and nothing more (a
 * second fault to map the page after the window opens it, one a page,
 * cost more than one call that maps them all). What a kernel is charged
 * does not change: the window still opens each page at its first touch.
 * Nobody holds the new addresses yet while they are open here. */
static void
core_map_ahead(size_t off, size_t pages)
{
#ifdef MADV_POPULATE_WRITE
    unsigned char *dev = g.dev_base + off;

    madvise(g.rw_base + off, pages, MADV_POPULATE_WRITE);
    if (mprotect(dev, pages, PROT_READ | PROT_WRITE) == 0) {
        madvise(dev, pages, MADV_POPULATE_WRITE);
        mprotect(dev, pages, PROT_NONE);
    }
#else
    (void)off;
    (void)pages;
#endif
}

/* ---- Stream-ordered reuse ------------------------------------------------- */

/* CUDA's stream-ordered allocator reuses what a stream frees: "The
 * allocator is free to reallocate the memory as long as it can guarantee
 * that compliant memory accesses will not overlap temporally" (the driver
 * API reference, Stream Ordered Memory Allocator, overview:
 * https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MALLOC__ASYNC.html;
 * the programming guide's section 4.3 speaks of "taking advantage of
 * stream-ordering semantics to reuse memory allocations"; the pools'
 * REUSE_* attributes, mempool.c). The emulator keeps the pages of
 * a block freed in stream order (mapped in both views) for the next
 * stream-ordered allocation of its device that fits in them, so that a
 * program's scratch of each call does not cost fresh pages at every call.
 * A kept block's free has run, so every operation queued before it has
 * too: the block is no one's, and it is handed to any stream. It is no
 * allocation while kept (its addresses fault as freed memory's), and the
 * allocation made in it reads as NaN, as every fresh one. At most
 * CORE_KEPT_MAX blocks and CORE_KEPT_BYTES are kept, the oldest given back
 * first, and all of them before an allocation would fail for want of
 * room; device memory in use (cuMemGetInfo, a full device) counts
 * allocations only, as before. */
#define CORE_KEPT_MAX 32
#define CORE_KEPT_BYTES ((size_t)512 << 20)

/* Gives back the oldest kept blocks until at most n and bytes are kept. */
static void
core_kept_trim(size_t n, size_t bytes)
{
    while (g.nkept > n || g.kept_bytes > bytes) {
        size_t i, oldest = g.nallocs;

        for (i = 0; i < g.nallocs; i++)
            if (g.allocs[i].kept &&
                (oldest == g.nallocs ||
                 g.allocs[i].kept_seq < g.allocs[oldest].kept_seq))
                oldest = i;
        if (oldest == g.nallocs)
            return;
        core_alloc_remove(oldest);
    }
}

/* The kept block of device dev with the fewest pages of at least `pages`
 * and at most twice that, the last kept of those, or -1. */
static long
core_kept_fit(int dev, size_t pages)
{
    long best = -1;
    size_t i;

    for (i = 0; g.nkept > 0 && i < g.nallocs; i++) {
        const struct core_alloc_rec *r = &g.allocs[i];
        const struct core_alloc_rec *b = best < 0 ? NULL : &g.allocs[best];

        if (r->kept && r->dev == dev && r->pages >= pages &&
            r->pages / 2 <= pages &&
            (!b || r->pages < b->pages ||
             (r->pages == b->pages && r->kept_seq > b->kept_seq)))
            best = (long)i;
    }
    return best;
}

/* An allocation of `bytes` (span `span`) in kept block i, its end at the
 * block's end, before the guard page. The record's extent does not move,
 * so its place in the records' order by base does not either. */
static CUdeviceptr
core_kept_take(size_t i, struct CUctx_st *ctx, size_t bytes, size_t span)
{
    struct core_alloc_rec *r = &g.allocs[i];

    g.nkept--;
    g.kept_bytes -= r->pages;
    r->kept = 0;
    r->base = (CUdeviceptr)(uintptr_t)(g.dev_base + r->place + r->pages -
                                       span);
    r->size = bytes;
    r->span = span;
    r->async = 1;
    r->freeing = 0;
    r->ctx = ctx;
    return r->base;
}

/* A record of `bytes` (span `span`) on `pages` fresh pages of the span,
 * mapped in both views; its base in *out. */
static CUresult
core_alloc_fresh(struct CUctx_st *ctx, size_t bytes, size_t span,
                 size_t pages, int async, CUdeviceptr *out)
{
    struct core_alloc_rec rec = { 0 };
    size_t off;

    if (core_find_gap(pages + core_page(), g.cursor, &off) != 0 &&
        core_find_gap(pages + core_page(), 0, &off) != 0) {
        core_kept_trim(0, 0);
        if (core_find_gap(pages + core_page(), 0, &off) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rec.base = (CUdeviceptr)(uintptr_t)(g.dev_base + off + pages - span);
    rec.size = bytes;
    rec.span = span;
    rec.place = off;
    rec.pages = pages;
    rec.dev = ctx->dev;
    rec.async = async;
    rec.ctx = ctx;
    if (core_insert(&rec) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    core_map_ahead(off, pages);
    g.cursor = off + pages + core_page();
    *out = rec.base;
    return CUDA_SUCCESS;
}

CUresult
core_alloc(struct CUctx_st *ctx, size_t bytes, int async, CUdeviceptr *out)
{
    size_t span, pages;
    long kept;
    CUresult rc;

    if (bytes > g.span)
        return CUDA_ERROR_OUT_OF_MEMORY;
    span = (bytes + CORE_ALIGN - 1) / CORE_ALIGN * CORE_ALIGN;
    if (g.used[ctx->dev] + span > emu_gpu()->total_mem)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Pages of its own, its end at their end, and a guard page after them
     * that no allocation has: a kernel that runs past the end of its
     * allocation faults (core_window_open), as on a GPU. */
    pages = (span + core_page() - 1) / core_page() * core_page();
    if (async && (kept = core_kept_fit(ctx->dev, pages)) >= 0)
        *out = core_kept_take((size_t)kept, ctx, bytes, span);
    else if ((rc = core_alloc_fresh(ctx, bytes, span, pages, async, out)) !=
             CUDA_SUCCESS)
        return rc;
    /* Device memory handed out reads as NaN, so a read of memory nobody
     * wrote shows up in results. */
    memset(g.rw_base + (*out - (uintptr_t)g.dev_base), 0xff, bytes);
    g.used[ctx->dev] += span;
    return CUDA_SUCCESS;
}

static long
core_find_start(CUdeviceptr p, int is_host)
{
    long i = core_find_index(p);

    if (i < 0 || g.allocs[i].base != p || g.allocs[i].is_host != is_host)
        return -1;
    return i;
}

CUresult
core_free(CUdeviceptr p)
{
    long i = core_find_start(p, 0);

    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    core_alloc_remove((size_t)i);
    return CUDA_SUCCESS;
}

CUresult
core_free_keep(CUdeviceptr p)
{
    long i = core_find_start(p, 0);
    struct core_alloc_rec *r;

    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    r = &g.allocs[i];
    if (!r->async) {
        core_alloc_remove((size_t)i);
        return CUDA_SUCCESS;
    }
    core_window_release(r->place, r->pages);
    core_writers_forget(r);
    g.used[r->dev] -= r->span;
    r->kept = 1;
    r->freeing = 0;
    r->kept_seq = ++g.kept_seq;
    g.nkept++;
    g.kept_bytes += r->pages;
    core_kept_trim(CORE_KEPT_MAX, CORE_KEPT_BYTES);
    return CUDA_SUCCESS;
}

CUresult
core_free_begin(CUdeviceptr p, int *async)
{
    long i = core_find_start(p, 0);

    if (i < 0 || g.allocs[i].freeing)
        return CUDA_ERROR_INVALID_VALUE;
    g.allocs[i].freeing = 1;
    if (async)
        *async = g.allocs[i].async;
    return CUDA_SUCCESS;
}

CUresult
core_host_alloc(struct CUctx_st *ctx, size_t bytes, void **out)
{
    struct core_alloc_rec rec = { 0 };
    void *p = NULL;

    if (posix_memalign(&p, 4096, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rec.base = (CUdeviceptr)(uintptr_t)p;
    rec.size = bytes;
    rec.span = bytes;
    rec.dev = ctx->dev;
    rec.is_host = 1;
    rec.ctx = ctx;
    if (core_insert(&rec) != 0) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = p;
    return CUDA_SUCCESS;
}

CUresult
core_host_free(void *p)
{
    long i = core_find_start((CUdeviceptr)(uintptr_t)p, 1);

    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    core_alloc_remove((size_t)i);
    return CUDA_SUCCESS;
}

size_t
core_mem_used(int dev)
{
    return g.used[dev];
}

/* AMPSHIM_EMU_MEMCHECK=1: the device memory still allocated at exit (a
 * queued stream-ordered free counts as given back) on stderr, for the
 * leak checks of the preload tests. */
__attribute__((destructor)) static void
core_memcheck(void)
{
    const char *s = secure_getenv("AMPSHIM_EMU_MEMCHECK");
    size_t bytes = 0, n = 0;

    if (!s || strcmp(s, "1") != 0)
        return;
    core_lock();
    for (size_t i = 0; i < g.nallocs; i++) {
        if (g.allocs[i].is_host || g.allocs[i].freeing || g.allocs[i].kept)
            continue;
        bytes += g.allocs[i].size;
        n++;
    }
    core_unlock();
    fprintf(stderr, "ampshim-emu: device memory at exit: %zu bytes in %zu "
            "allocations\n", bytes, n);
}

void *
emu_dev_at(CUdeviceptr p, size_t bytes)
{
    void *at = NULL;
    long i;

    core_lock();
    i = core_find_index(p);
    if (i >= 0) {
        const struct core_alloc_rec *r = &g.allocs[i];

        if (bytes <= r->size - (size_t)(p - r->base))
            at = r->is_host ? (void *)(uintptr_t)p
                            : g.rw_base + (p - (uintptr_t)g.dev_base);
    }
    if (at && core_running_q)
        core_note_access(p, bytes, 0);
    core_unlock();
    return at;
}

void
emu_dev_wrote(CUdeviceptr p, size_t bytes)
{
    core_lock();
    if (core_running_q)
        core_note_access(p, bytes, 1);
    core_unlock();
}

/* ---- The device window ------------------------------------------------------ */

/* A page's state in the window: what the running launch has done to it
 * (state), and how far its device address is open (prot). */
enum { WIN_CLOSED = 0, WIN_READ, WIN_WRITTEN };

static struct {
    unsigned char *state;       /* per page of the span, for this launch */
    size_t *opened;             /* pages this launch touched, in order */
    size_t nopened;
    /* Per page of the span, its device address's access: WIN_CLOSED,
     * WIN_READ (read-only) or WIN_WRITTEN (read-write). Where the kernels
     * name their accesses, a page stays open from one launch to the next
     * while the emulator's lock is held, and all close when the program's
     * code runs again (core_window_settle): on a virtual machine the first
     * touch of a page whose protection changed costs some 5 us, twice the
     * mprotect call that changed it. */
    unsigned char *prot;
    size_t *held;               /* pages whose prot is not WIN_CLOSED */
    size_t nheld;
    double bytes;
    sigjmp_buf *on_fault;
    struct sigaction old;
    pthread_t thread;           /* the one that runs the kernel */
    int open;
    /* g.span while the kernels' loads and stores name themselves to the
     * window (emu_kernels_tracked, core_window_access: a page opens at its
     * first access's call, not at its fault), else 0. */
    uintptr_t limit;
    uintptr_t page_mask;        /* the page size less 1 */
    unsigned shift;             /* log2 of the page size */
    int faults_read;            /* AMPSHIM_EMU_WINDOW read */
    int faults_forced;          /* AMPSHIM_EMU_WINDOW=faults */
} win;

/* Whether the faulting access writes, where the CPU says so; elsewhere a
 * page opens for reading first and faults again when written. */
static int
core_fault_writes(const void *uctx)
{
#if defined(__x86_64__)
    const ucontext_t *uc = uctx;

    return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)uctx;
    return 0;
#endif
}

/* Bytes of the allocation r on span page pg. */
static double
core_page_bytes(const struct core_alloc_rec *r, size_t pg)
{
    uintptr_t lo = (uintptr_t)g.dev_base + pg * core_page();
    uintptr_t hi = lo + core_page();
    uintptr_t b = (uintptr_t)r->base, e = b + r->size;

    return (double)((e < hi ? e : hi) - (b > lo ? b : lo));
}

/* Gives span page pg's device address the access `want` (WIN_READ or
 * WIN_WRITTEN), unless it has it already. */
static void
core_window_allow(size_t pg, unsigned char want)
{
    if (win.prot[pg] >= want)
        return;
    mprotect(g.dev_base + pg * core_page(), core_page(),
             want == WIN_WRITTEN ? PROT_READ | PROT_WRITE : PROT_READ);
    if (win.prot[pg] == WIN_CLOSED)
        win.held[win.nheld++] = pg;
    win.prot[pg] = want;
}

/* How an access reached the window: a fault at a device address, a
 * kernel's call before an access at a device address, or its call before
 * an access through the emulator's alias of the span (a pointer parameter,
 * core_kernel_alias), whose pages are always open. */
enum { WIN_VIA_FAULT, WIN_VIA_DEVICE, WIN_VIA_ALIAS };

/* Checks that the access to span offset off, `writes` or not, lies in an
 * allocation and charges the launch its page's bytes in the allocation,
 * once for reading and once for writing. A device address's page opens
 * for it. Returns 0, or -1 when off lies in no allocation or a fault was
 * not the window's. Runs in the fault handler too, on the thread that
 * holds the lock: the allocation table does not change under it. */
static int
core_window_touch(uintptr_t off, int writes, int via)
{
    unsigned char want = writes ? WIN_WRITTEN : WIN_READ;
    size_t pg;
    long i;

    if (off >= g.span)
        return -1;
    i = core_find_index((CUdeviceptr)(uintptr_t)(g.dev_base + off));
    if (i < 0 || g.allocs[i].is_host)
        return -1;
    pg = off / core_page();
    if (via == WIN_VIA_FAULT && win.prot[pg] >= want) {
        /* Where the CPU does not say whether a fault writes, a fault at
         * a page open for reading is a write's. */
        if (win.prot[pg] != WIN_READ)
            return -1;
        want = WIN_WRITTEN;
    }
    if (via != WIN_VIA_ALIAS)
        core_window_allow(pg, want);
    if (win.state[pg] >= want)
        return 0;
    if (win.state[pg] == WIN_CLOSED)
        win.opened[win.nopened++] = pg;
    win.state[pg] = want;
    win.bytes += core_page_bytes(&g.allocs[i], pg);
    return 0;
}

/* A touch outside every allocation: the launch ends there
 * (emu_grid_run's on_fault), from the fault handler or an access hook. */
static void __attribute__((noreturn))
core_window_abandon(void)
{
    emu_grid_abandon();
    siglongjmp(*win.on_fault, 1);
}

static void
core_window_fault(int sig, siginfo_t *si, void *uctx)
{
    /* pthread_self reads the thread's own pointer, where gettid would
     * be a system call at every page a kernel touches. */
    if (win.open && pthread_equal(pthread_self(), win.thread)) {
        if (core_window_touch((uintptr_t)si->si_addr - (uintptr_t)g.dev_base,
                              core_fault_writes(uctx), WIN_VIA_FAULT) == 0)
            return;
        core_window_abandon();
    }
    /* Another thread's fault: what it would have been without the
     * window, a host access to device memory among them. */
    if (win.old.sa_flags & SA_SIGINFO)
        win.old.sa_sigaction(sig, si, uctx);
    else if (win.old.sa_handler != SIG_IGN && win.old.sa_handler != SIG_DFL)
        win.old.sa_handler(sig);
    else
        signal(sig, SIG_DFL);
}

/* ---- The kernels' own accesses ------------------------------------------- */

/* Whether the window follows the kernels' accesses: where they are built
 * to name them, unless AMPSHIM_EMU_WINDOW=faults asks for the faults. */
static int
core_window_tracks(void)
{
    if (!win.faults_read) {
        const char *s = secure_getenv("AMPSHIM_EMU_WINDOW");

        win.faults_forced = s && strcmp(s, "faults") == 0;
        if (s && *s && !win.faults_forced && strcmp(s, "accesses") != 0)
            fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_WINDOW=%s is not "
                    "faults or accesses; the window follows the kernels' "
                    "accesses where they are built to call it\n", s);
        win.faults_read = 1;
    }
    return emu_kernels_tracked && !win.faults_forced;
}

const char *
core_window_kind(void)
{
    return core_window_tracks() ? "accesses" : "faults";
}

/* Where the shim's kernels are built with every load and store of theirs
 * preceded by a call that names it (emu_kernels_tracked: meson.build
 * builds emu_kernels.cpp with the compiler's address-sanitizer
 * instrumentation in its kernel form, which calls the functions below and
 * needs no run-time library), the window counts a page at the call before
 * its first access, for reading at a load and for writing at a store, and
 * an access outside every allocation ends the launch there, as its fault
 * would: core_window_touch, as at a fault. A kernel's pointer parameters
 * then reach device memory through the emulator's alias of the span
 * (core_kernel_alias), whose pages are always open, so that nothing is
 * opened for them; a device address the kernel reads from memory (a
 * batched call's array of pointers) opens its page at the call, with one
 * mprotect, and no fault is taken (on a virtual machine a fault and its
 * signal cost some 20 us, an mprotect call a few, and the first touch of
 * a page whose protection changed about 5 more). An access the compiler
 * does not name (none is known) at a device address still opens its page
 * by its fault. */
static void __attribute__((noinline))
core_window_access_slow(uintptr_t off, size_t n, int writes, int via)
{
    uintptr_t last = off + n - 1;

    for (;;) {
        size_t pg = off >> win.shift;

        if ((win.state[pg] < WIN_READ + writes ||
             (via == WIN_VIA_DEVICE && win.prot[pg] < WIN_READ + writes)) &&
            core_window_touch(off, writes, via) != 0)
            core_window_abandon();
        /* An access of more than one byte may cross into the next page. */
        if ((off >> win.shift) == (last >> win.shift) || last >= g.span)
            return;
        off = (last >> win.shift) << win.shift;
    }
}

/* Before every load and store of the kernels, the host's memory among
 * them: an address off the alias's or the device span's start below
 * win.limit (the span while a launch follows the accesses, else 0) whose
 * page the launch has counted for the access (and, at a device address,
 * has open for it) returns at once. WIN_READ + writes is the state the
 * access needs (WIN_CLOSED < WIN_READ < WIN_WRITTEN). */
static inline __attribute__((always_inline)) void
core_window_access(uintptr_t a, size_t n, int writes)
{
    uintptr_t off = a - (uintptr_t)g.rw_base;
    int via = WIN_VIA_ALIAS;

    if (off >= win.limit) {
        off = a - (uintptr_t)g.dev_base;
        if (off >= win.limit)
            return;
        via = WIN_VIA_DEVICE;
        if (win.prot[off >> win.shift] < WIN_READ + writes) {
            core_window_access_slow(off, n, writes, via);
            return;
        }
    }
    if (((off & win.page_mask) + n > win.page_mask + 1) ||
        win.state[off >> win.shift] < WIN_READ + writes)
        core_window_access_slow(off, n, writes, via);
}

/* While the window is open and follows the accesses (win.limit). */
void *
core_kernel_alias(void *p)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)g.dev_base;

    if (p == NULL || off >= win.limit)
        return p;
    return g.rw_base + off;
}

#define CORE_ACCESS_HOOKS(n)                                                 \
    void __asan_load##n##_noabort(uintptr_t a)                              \
        __attribute__((visibility("hidden")));                               \
    void __asan_load##n##_noabort(uintptr_t a)                              \
    {                                                                        \
        core_window_access(a, n, 0);                                         \
    }                                                                        \
    void __asan_store##n##_noabort(uintptr_t a)                             \
        __attribute__((visibility("hidden")));                               \
    void __asan_store##n##_noabort(uintptr_t a)                             \
    {                                                                        \
        core_window_access(a, n, 1);                                         \
    }
CORE_ACCESS_HOOKS(1)
CORE_ACCESS_HOOKS(2)
CORE_ACCESS_HOOKS(4)
CORE_ACCESS_HOOKS(8)
CORE_ACCESS_HOOKS(16)
#undef CORE_ACCESS_HOOKS

#define CORE_ACCESS_HOOK_N(kind, writes)                                     \
    void __asan_##kind##N_noabort(uintptr_t a, size_t n)                    \
        __attribute__((visibility("hidden")));                               \
    void __asan_##kind##N_noabort(uintptr_t a, size_t n)                    \
    {                                                                        \
        if (n)                                                               \
            core_window_access(a, n, writes);                                \
    }
CORE_ACCESS_HOOK_N(load, 0)
CORE_ACCESS_HOOK_N(store, 1)
#undef CORE_ACCESS_HOOK_N

/* The window's page tables, reserved once: a state byte and an entry per
 * page of the span, backed only where used. */
static int
core_window_reserve(void)
{
    size_t pages = g.span / core_page();
    const size_t size[4] = { pages, pages * sizeof(size_t), pages,
                             pages * sizeof(size_t) };
    void *table[4];
    int ok = 1;

    if (win.state)
        return 0;
    for (int t = 0; t < 4; t++) {
        table[t] = mmap(NULL, size[t], PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        ok &= table[t] != MAP_FAILED;
    }
    if (!ok) {
        for (int t = 0; t < 4; t++)
            if (table[t] != MAP_FAILED)
                munmap(table[t], size[t]);
        return -1;
    }
    win.state = table[0];
    win.opened = table[1];
    win.prot = table[2];
    win.held = table[3];
    win.shift = (unsigned)__builtin_ctzl(core_page());
    win.page_mask = core_page() - 1;
    return 0;
}

void
core_window_open(sigjmp_buf *on_fault)
{
    struct sigaction sa;

    win.on_fault = on_fault;
    win.nopened = 0;
    win.bytes = 0.0;
    win.thread = pthread_self();
    /* Without the tables no page opens and the kernel faults. */
    win.open = core_window_reserve() == 0;
    win.limit = win.open && core_window_tracks() ? g.span : 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = core_window_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &win.old);
}

/* Closes pages [first, first + n) of the span. */
static void
core_window_shut(size_t first, size_t n)
{
    mprotect(g.dev_base + first * core_page(), n * core_page(), PROT_NONE);
}

static int
core_page_order(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

/* Pages of closed window between two opened ones that one mprotect call
 * still spans rather than making two: those pages are closed already, so
 * the call leaves them as they are and only walks their page table
 * entries, which costs far less than a call's TLB flush (the cost of
 * closing the window on a virtual machine). One page table's worth. */
#define CORE_SHUT_GAP 512

/* Closes every page open at its device address, in address order, so
 * that the pages kernels opened in turn in their allocations close in a
 * few calls, not one per run of the order they opened in. Runs where the
 * program's code may run next: at the outermost core_unlock, and after
 * each launch whose pages the faults count (they must fault again at the
 * next). */
static void
core_window_settle(void)
{
    size_t run = 0, first = 0;

    if (win.nheld == 0)
        return;
    qsort(win.held, win.nheld, sizeof(win.held[0]), core_page_order);
    for (size_t i = 0; i < win.nheld; i++) {
        size_t pg = win.held[i];

        win.prot[pg] = WIN_CLOSED;
        if (run && pg - (first + run) <= CORE_SHUT_GAP) {
            run = pg - first + 1;
            continue;
        }
        if (run)
            core_window_shut(first, run);
        first = pg;
        run = 1;
    }
    if (run)
        core_window_shut(first, run);
    win.nheld = 0;
}

/* Closes the open pages of span bytes [place, place + bytes): an
 * allocation's, as it stops being one, so that no access reaches it
 * unchecked. */
static void
core_window_release(size_t place, size_t bytes)
{
    size_t lo = place / core_page(), hi = (place + bytes) / core_page();
    size_t kept = 0;

    for (size_t i = 0; i < win.nheld; i++) {
        size_t pg = win.held[i];

        if (pg >= lo && pg < hi)
            win.prot[pg] = WIN_CLOSED;
        else
            win.held[kept++] = pg;
    }
    if (kept < win.nheld)
        core_window_shut(lo, hi - lo);
    win.nheld = kept;
}

/* A child of fork() has its device addresses mapped afresh, closed: the
 * parent's open pages are not open there (core_fork_child). */
static void
core_window_forget(void)
{
    for (size_t i = 0; i < win.nheld; i++)
        win.prot[win.held[i]] = WIN_CLOSED;
    win.nheld = 0;
}

double
core_window_close(void)
{
    sigaction(SIGSEGV, &win.old, NULL);
    for (size_t i = 0; i < win.nopened; i++) {
        size_t pg = win.opened[i];

        core_note_page(pg, win.state[pg] == WIN_WRITTEN);
        win.state[pg] = WIN_CLOSED;
    }
    /* Pages the next launch's faults must count close now; pages the
     * kernels' own calls count stay open until the lock is let go. */
    if (!win.limit)
        core_window_settle();
    win.limit = 0;
    win.nopened = 0;
    win.open = 0;
    return win.bytes;
}

int
core_kernel_reachable(const void *p)
{
    long i;

    if (!p || emu_is_device_address(p))
        return 1;
    i = core_find_index((CUdeviceptr)(uintptr_t)p);
    return i >= 0 && g.allocs[i].is_host;
}

int
emu_is_device_address(const void *p)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)g.dev_base;

    return g.dev_base && a >= b && a - b < g.span;
}

static void core_run_one(struct CUstream_st *s);
static struct CUstream_st *core_first_queued(struct CUctx_st *ctx);

/* ---- How the device keeps up: behind, noisy ------------------------------- */

/* AMPSHIM_EMU_BEHIND=DEPTH: the device runs behind the host as a real one
 * under a framework does. Work runs when the host waits for it or when a
 * stream has more than DEPTH ops queued (the oldest of the context run
 * until it has DEPTH), and a query of unfinished work answers "not ready"
 * without running anything; only a host that polls the same unfinished
 * work CORE_POLLS_TO_FINISH times in a row with nothing queued between
 * sees it finish, so that a polling loop ends. 0 (the default): queries
 * of unfinished work see it finish at the next query, and nothing bounds
 * a queue.
 * AMPSHIM_EMU_NOISE=FRACTION[:SEED]: each op's modelled time is scaled by
 * a factor drawn uniformly from [1 - FRACTION, 1 + FRACTION] (FRACTION
 * below 1; SEED 1 by default), so that a decision taken on one timed
 * sample is seen to flip. */
#define CORE_POLLS_TO_FINISH 1000

static struct {
    int read;
    unsigned long depth;        /* 0: not behind */
    double noise;
    uint64_t rng;
    unsigned long polls;        /* "not ready" answers since the last enqueue */
} pace;

static void
core_pace_read(void)
{
    const char *s = secure_getenv("AMPSHIM_EMU_BEHIND");
    char *end;

    if (pace.read)
        return;
    pace.read = 1;
    pace.rng = 1;
    if (s && *s) {
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || v > 1000000)
            fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_BEHIND=%s is not a "
                    "queue depth (accepted: 0 to 1000000); the device keeps "
                    "up\n", s);
        else
            pace.depth = v;
    }
    s = secure_getenv("AMPSHIM_EMU_NOISE");
    if (s && *s) {
        double f;
        unsigned long long seed = 1;

        errno = 0;
        f = strtod(s, &end);
        if (*end == ':')
            seed = strtoull(end + 1, &end, 10);
        if (errno || *end || !(f >= 0.0 && f < 1.0))
            fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_NOISE=%s is not a "
                    "noise (accepted: FRACTION[:SEED], FRACTION from 0 to "
                    "below 1); modelled times are exact\n", s);
        else {
            pace.noise = f;
            pace.rng = seed ? seed : 1;
        }
    }
}

/* The factor of the next op's modelled time. */
static double
core_noise_factor(void)
{
    core_pace_read();
    if (pace.noise == 0.0)
        return 1.0;
    /* xorshift64*: enough for a uniform draw, the same for a seed. */
    pace.rng ^= pace.rng >> 12;
    pace.rng ^= pace.rng << 25;
    pace.rng ^= pace.rng >> 27;
    double u = (double)((pace.rng * 0x2545F4914F6CDD1DULL) >> 11) /
               (double)(1ULL << 53);

    return 1.0 + pace.noise * (2.0 * u - 1.0);
}

int
core_query_runs(void)
{
    core_pace_read();
    if (pace.depth == 0)
        return 1;
    if (++pace.polls < CORE_POLLS_TO_FINISH)
        return 0;
    pace.polls = 0;
    return 1;
}

/* ---- Streams and queued work ----------------------------------------------- */

void
core_mark_put(struct core_mark *m)
{
    if (m && --m->refs == 0) {
        free(m->vc.e);
        free(m);
    }
}

static void
core_qop_free(struct core_qop *q)
{
    int i;

    if (q->op.release)
        q->op.release(q->op.arg);
    for (i = 0; i < q->ndeps; i++)
        core_mark_put(q->deps[i]);
    free(q->deps);
    core_mark_put(q->mark);
    free(q);
}

static int
core_stream_blocking(const struct CUstream_st *s)
{
    return s->kind == CORE_STREAM_PER_THREAD ||
           (s->kind == CORE_STREAM_USER && !(s->flags & CU_STREAM_NON_BLOCKING));
}

static int
core_add_dep(struct core_qop *q, struct core_mark *m)
{
    struct core_mark **d;

    if (!m)
        return 0;
    /* Whether or not it has run, what came before m comes before q. */
    if (core_vc_merge(&q->mark->vc, &m->vc) != 0)
        return -1;
    if (m->done)
        return 0;
    d = realloc(q->deps, (size_t)(q->ndeps + 1) * sizeof(*d));
    if (!d)
        return -1;
    q->deps = d;
    m->refs++;
    q->deps[q->ndeps++] = m;
    return 0;
}

/* The legacy default stream waits for all earlier work in blocking streams,
 * and blocking streams wait for earlier work in the legacy stream. */
static int
core_implicit_deps(struct CUstream_st *s, struct core_qop *q)
{
    struct CUstream_st *t;

    if (s->kind == CORE_STREAM_LEGACY) {
        for (t = s->ctx->streams; t; t = t->next)
            if (t != s && core_stream_blocking(t) && core_add_dep(q, t->last))
                return -1;
    } else if (core_stream_blocking(s) && s->ctx->legacy) {
        if (core_add_dep(q, s->ctx->legacy->last))
            return -1;
    }
    return 0;
}

int
core_oplist_add(struct core_oplist *list, const struct emu_op *op)
{
    if (list->n == list->cap) {
        int cap = list->cap ? list->cap * 2 : 16;
        struct emu_op *ops = realloc(list->ops, (size_t)cap * sizeof(*ops));

        if (!ops)
            return -1;
        list->ops = ops;
        list->cap = cap;
    }
    list->ops[list->n++] = *op;
    if (op->node == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
        op->node == CU_GRAPH_NODE_TYPE_MEM_FREE)
        list->mem_nodes++;
    return 0;
}

void
core_oplist_put(struct core_oplist *list)
{
    int i;

    if (!list || --list->refs > 0)
        return;
    /* A captured op may be replayed by every launch of the graph, so its
     * argument is released only when the last graph using it goes. */
    for (i = 0; i < list->n; i++)
        if (list->ops[i].release)
            list->ops[i].release(list->ops[i].arg);
    for (i = 0; i < list->nurefs; i++)
        core_uobj_put(list->urefs[i].obj, list->urefs[i].count);
    core_oplist_put(list->shares);
    free(list->ops);
    free(list->urefs);
    free(list);
}

static void
core_capture_invalidate(struct CUctx_st *ctx, uint64_t id)
{
    struct CUstream_st *t;

    for (t = ctx->streams; t; t = t->next)
        if (t->capture_id == id && t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
            t->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
}

static void
core_release_op(const struct emu_op *op)
{
    if (op->release)
        op->release(op->arg);
}

CUresult
core_enqueue(struct CUstream_st *s, const struct emu_op *op,
             struct core_mark *dep, struct core_mark **mark_out)
{
    struct core_qop *q = NULL;
    struct core_mark *m = NULL;
    struct CUstream_st *t;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

    if (mark_out)
        *mark_out = NULL;
    if (s->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        goto fail;
    }
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        if (core_oplist_add(s->graph->list, op) != 0)
            goto fail;
        return CUDA_SUCCESS;
    }
    if (s->kind == CORE_STREAM_LEGACY) {
        /* Work on the legacy stream would join a capturing blocking
         * stream's work: illegal, and the capture is lost. */
        for (t = s->ctx->streams; t; t = t->next) {
            if (t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
                core_stream_blocking(t)) {
                core_capture_invalidate(s->ctx, t->capture_id);
                rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
            }
        }
        if (rc == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
            goto fail;
    }
    q = calloc(1, sizeof(*q));
    m = calloc(1, sizeof(*m));
    if (!q || !m)
        goto fail;
    q->op = *op;
    q->seq = ++s->next_seq;
    q->order = ++s->ctx->next_order;
    q->floor_ns = s->ctx->floor_ns;
    q->mark = m;
    m->refs = 2;                /* the op and the stream's `last` */
    m->stream = s;
    m->seq = q->seq;
    if (core_implicit_deps(s, q) != 0 || core_add_dep(q, dep) != 0 ||
        (s->last && core_vc_merge(&m->vc, &s->last->vc) != 0) ||
        core_vc_merge(&m->vc, &g.host_vc) != 0 ||
        core_vc_raise(&m->vc, s->id, q->seq) != 0) {
        s->next_seq--;
        q->op.release = NULL;
        m->refs = 1;
        core_qop_free(q);
        q = NULL;
        m = NULL;
        goto fail;
    }
    core_mark_put(s->last);
    s->last = m;
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    if (mark_out) {
        m->refs++;
        *mark_out = m;
    }
    core_pace_read();
    pace.polls = 0;
    /* Behind: a full queue makes the device catch up to its depth. */
    if (pace.depth)
        while (s->head && s->next_seq - s->done_seq > pace.depth)
            core_run_one(core_first_queued(s->ctx));
    return CUDA_SUCCESS;
fail:
    free(q);
    free(m);
    core_release_op(op);
    return rc;
}

/* The op whose run() is running, for core_op_set_model_ns and
 * core_note_access. */
static struct emu_op *core_running_op;

void
core_op_set_model_ns(double ns)
{
    if (core_running_op)
        core_running_op->model_ns = ns;
}

/* Runs the head op of s once its dependencies have run. */
static void
core_run_one(struct CUstream_st *s)
{
    struct core_qop *q = s->head;
    struct CUctx_st *ctx = s->ctx;
    double start = s->clock_ns > q->floor_ns ? s->clock_ns : q->floor_ns;
    int i;

    /* Dependencies were enqueued before q, so they never lead back to s's
     * unfinished ops: the recursion ends. */
    for (i = 0; i < q->ndeps; i++) {
        struct core_mark *d = q->deps[i];

        if (!d->done)
            core_run_until(d->stream, d->seq);
        if (d->end_ns > start)
            start = d->end_ns;
    }
    s->head = q->next;
    if (!s->head)
        s->tail = NULL;
    /* After a failed op the context is unusable, as on a GPU: later work
     * is dropped. */
    if (q->op.run && ctx->sticky == CUDA_SUCCESS) {
        CUresult rc;

        core_running_op = &q->op;
        core_running_q = q;
        rc = q->op.run(q->op.arg);
        core_running_op = NULL;
        core_running_q = NULL;

        if (rc != CUDA_SUCCESS)
            ctx->sticky = rc;
    }
    s->clock_ns = start + q->op.model_ns * core_noise_factor();
    s->done_seq = q->seq;
    q->mark->done = 1;
    q->mark->end_ns = s->clock_ns;
    q->mark->stream = NULL;
    core_qop_free(q);
}

/* The stream of ctx whose next queued op was queued first, or NULL. */
static struct CUstream_st *
core_first_queued(struct CUctx_st *ctx)
{
    struct CUstream_st *t, *first = NULL;

    for (t = ctx->streams; t; t = t->next)
        if (t->head && (!first || t->head->order < first->head->order))
            first = t;
    return first;
}

/* Runs s's work up to seq, and before each op every op of the context's
 * other streams queued before it: the order in which a GPU that keeps up
 * with its host finishes work, so that a consumer on one stream that
 * forgot to wait for a producer on another sees what it would see on a
 * GPU, where the earlier kernel had long finished (a benign race there).
 * CUDA promises no order between streams (Programming Guide, "Streams":
 * work of different streams may run in any order or concurrently); the
 * call log names such a race (core_race_check). Dependencies point to
 * earlier ops, so queue order keeps them. */
void
core_run_until(struct CUstream_st *s, uint64_t seq)
{
    while (s->head && s->done_seq < seq)
        core_run_one(core_first_queued(s->ctx));
}

int
core_stream_pending(struct CUstream_st *s)
{
    return s->head != NULL;
}

static void
core_raise_floor(struct CUctx_st *ctx, double t)
{
    if (t > ctx->floor_ns)
        ctx->floor_ns = t;
}

void
core_reap(struct CUctx_st *ctx)
{
    struct CUstream_st **pp = &ctx->streams;

    while (*pp) {
        struct CUstream_st *s = *pp;

        if (s->destroyed && !s->head) {
            *pp = s->next;
            core_vc_drop(&g.host_vc, s->id);
            core_mark_put(s->last);
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

CUresult
core_sync_stream(struct CUstream_st *s)
{
    struct CUctx_st *ctx = s->ctx;

    if (s->kind == CORE_STREAM_LEGACY) {
        /* Waiting for the legacy stream also waits for earlier work in the
         * blocking streams: a barrier op carries those dependencies. */
        struct emu_op barrier = { "sync", NULL, NULL, NULL, 0.0,
                                  CU_GRAPH_NODE_TYPE_EMPTY };

        if (core_enqueue(s, &barrier, NULL, NULL) != CUDA_SUCCESS)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    core_run_until(s, s->next_seq);
    core_raise_floor(ctx, s->clock_ns);
    core_host_waited(s->last);
    core_reap(ctx);
    core_pool_trim(ctx->dev);
    return ctx->sticky;
}

CUresult
core_sync_mark(struct CUctx_st *ctx, struct core_mark *m)
{
    if (m) {
        if (!m->done)
            core_run_until(m->stream, m->seq);
        core_raise_floor(ctx, m->end_ns);
        core_host_waited(m);
    }
    core_reap(ctx);
    core_pool_trim(ctx->dev);
    return ctx->sticky;
}

CUresult
core_sync_ctx(struct CUctx_st *ctx)
{
    struct CUstream_st *s;

    for (s = ctx->streams; s; s = s->next) {
        core_run_until(s, s->next_seq);
        core_raise_floor(ctx, s->clock_ns);
        core_host_waited(s->last);
    }
    core_reap(ctx);
    core_pool_trim(ctx->dev);
    return ctx->sticky;
}

static struct CUstream_st *
core_stream_alloc(struct CUctx_st *ctx, enum core_stream_kind kind,
                  unsigned flags, int priority)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    struct CUstream_st **tail;

    if (!s)
        return NULL;
    s->ctx = ctx;
    s->id = core_next_id();
    s->kind = kind;
    s->flags = flags;
    s->priority = priority;
    /* A new stream starts idle at the device's present time. */
    s->clock_ns = ctx->floor_ns;
    for (tail = &ctx->streams; *tail; tail = &(*tail)->next)
        ;
    *tail = s;
    return s;
}

CUresult
core_stream_new(struct CUctx_st *ctx, unsigned flags, int priority,
                struct CUstream_st **out)
{
    struct CUstream_st *s = core_stream_alloc(ctx, CORE_STREAM_USER, flags,
                                              priority);

    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = s;
    return CUDA_SUCCESS;
}

void
core_stream_destroy(struct CUstream_st *s)
{
    /* Pending work still completes; the stream goes once it has. */
    s->destroyed = 1;
    core_reap(s->ctx);
}

struct CUstream_st *
core_stream_lookup(CUstream h)
{
    struct CUctx_st *c;
    struct CUstream_st *s;

    for (c = g.ctxs; c; c = c->next)
        for (s = c->streams; s; s = s->next)
            if (s == h && !s->destroyed && s->kind == CORE_STREAM_USER)
                return s;
    return NULL;
}

CUresult
core_stream_resolve(struct CUctx_st *ctx, CUstream h, struct CUstream_st **out)
{
    struct CUstream_st *s;

    if (h == NULL || h == CU_STREAM_LEGACY) {
        *out = ctx->legacy;
        return CUDA_SUCCESS;
    }
    if (h == CU_STREAM_PER_THREAD) {
        pthread_t self = pthread_self();

        for (s = ctx->streams; s; s = s->next) {
            if (s->kind == CORE_STREAM_PER_THREAD &&
                pthread_equal(s->owner, self)) {
                *out = s;
                return CUDA_SUCCESS;
            }
        }
        s = core_stream_alloc(ctx, CORE_STREAM_PER_THREAD, 0, 0);
        if (!s)
            return CUDA_ERROR_OUT_OF_MEMORY;
        s->owner = self;
        *out = s;
        return CUDA_SUCCESS;
    }
    s = core_stream_lookup(h);
    if (!s || s->ctx != ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = s;
    return CUDA_SUCCESS;
}

/* The calling thread's capture interaction mode
 * (cuThreadExchangeStreamCaptureMode); GLOBAL by default. */
static _Thread_local CUstreamCaptureMode core_thread_capture_mode =
    CU_STREAM_CAPTURE_MODE_GLOBAL;

CUstreamCaptureMode
core_capture_exchange(CUstreamCaptureMode mode)
{
    CUstreamCaptureMode old = core_thread_capture_mode;

    core_thread_capture_mode = mode;
    return old;
}

/* Whether capture s prohibits the calling thread's potentially unsafe
 * calls, by the thread's mode: GLOBAL, the thread's own capture unless
 * relaxed, or any thread's global capture; THREAD_LOCAL, only its own
 * capture unless relaxed; RELAXED, none. */
static int
core_capture_prohibits(const struct CUstream_st *s, pthread_t self)
{
    int own = pthread_equal(s->capture_thread, self) &&
              s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED;

    switch (core_thread_capture_mode) {
    case CU_STREAM_CAPTURE_MODE_RELAXED:
        return 0;
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL:
        return own;
    default:
        return own || s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    }
}

CUresult
core_capture_guard(struct CUctx_st *ctx)
{
    pthread_t self = pthread_self();
    struct CUstream_st *s;
    CUresult rc = CUDA_SUCCESS;

    for (s = ctx->streams; s; s = s->next) {
        if (s->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE ||
            !core_capture_prohibits(s, self))
            continue;
        core_capture_invalidate(ctx, s->capture_id);
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return rc;
}

struct CUevent_st *
core_event_lookup(CUevent h)
{
    struct CUctx_st *c;
    struct CUevent_st *e;

    if (!h)
        return NULL;
    for (c = g.ctxs; c; c = c->next)
        for (e = c->events; e; e = e->next)
            if (e == h)
                return e;
    return NULL;
}

struct CUmod_st *
core_module_lookup(struct CUctx_st *ctx, CUmodule h)
{
    struct CUmod_st *m;

    for (m = ctx->modules; m; m = m->next)
        if (m == h)
            return m;
    return NULL;
}

struct CUfunc_st *
core_func_lookup(struct CUctx_st *ctx, CUfunction h)
{
    struct CUmod_st *m;
    struct CUfunc_st *f;

    if (!h)
        return NULL;
    for (m = ctx->modules; m; m = m->next)
        for (f = m->funcs; f; f = f->next)
            if (f == h)
                return f;
    return NULL;
}

/* ---- emu.h: queues and contexts for the other stand-ins ------------------- */

CUresult
emu_enqueue(CUstream stream, const struct emu_op *op)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    core_lock();
    rc = core_enter(&ctx, 1);
    if (rc == CUDA_SUCCESS)
        rc = core_stream_resolve(ctx, stream, &s);
    if (rc == CUDA_SUCCESS)
        rc = core_enqueue(s, op, NULL, NULL);   /* releases op on failure */
    else
        core_release_op(op);
    core_unlock();
    return rc;
}

CUresult
emu_sync_all(void)
{
    struct CUctx_st *ctx;
    CUresult rc;

    core_lock();
    rc = core_enter(&ctx, 1);
    if (rc == CUDA_SUCCESS)
        rc = core_capture_guard(ctx);
    if (rc == CUDA_SUCCESS)
        rc = core_sync_ctx(ctx);
    core_unlock();
    return rc;
}

CUresult
emu_runtime_bind(int dev)
{
    struct CUctx_st *cur, *ctx;
    CUresult rc;

    core_lock();
    rc = core_init();
    if (rc != CUDA_SUCCESS)
        goto out;
    if (dev < 0 || dev >= g.ndev) {
        rc = CUDA_ERROR_INVALID_DEVICE;
        goto out;
    }
    cur = core_tls_current();
    /* A primary context released or reset under the runtime is brought
     * back, as the runtime does after cudaDeviceReset. */
    if (cur && core_ctx_valid(cur) && cur->active)
        goto out;
    rc = core_primary_retain(dev, &ctx);
    if (rc == CUDA_SUCCESS)
        core_tls_set_current(ctx);
out:
    core_unlock();
    return rc;
}

int
emu_current_device(void)
{
    struct CUctx_st *cur;
    int dev = -1;

    core_lock();
    cur = core_tls_current();
    if (g.initialised && cur && core_ctx_valid(cur) && cur->active)
        dev = cur->dev;
    core_unlock();
    return dev;
}

CUresult
emu_capture_unsafe_call(void)
{
    struct CUctx_st *cur;
    CUresult rc = CUDA_SUCCESS;

    core_lock();
    cur = core_tls_current();
    if (g.initialised && cur && core_ctx_valid(cur) && cur->active)
        rc = core_capture_guard(cur);
    core_unlock();
    return rc;
}

CUresult
emu_op_fail(CUresult status, const char *op, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ampshim-emu: %s failed (%d): ", op ? op : "op",
            (int)status);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return status;
}

/* ---- Fault injection --------------------------------------------------------- */

#define FAULT_MAX 32
#define FAULT_NAME 64

struct core_fault {
    char what[FAULT_NAME];
    unsigned long nth;
    int from_nth;               /* "N+": the Nth and every later one */
    int status;                 /* 0: the caller's default */
    int partial;                /* ":partial": part of the output first */
};

static struct {
    pthread_once_t once;
    struct core_fault entries[FAULT_MAX];
    int n;
    char names[FAULT_MAX][FAULT_NAME];  /* one counter per distinct name */
    unsigned long counts[FAULT_MAX];
    int nnames;
} faults = { .once = PTHREAD_ONCE_INIT };

/* Parses one "what:N[+][:status][:partial]" entry; -1 if malformed. */
static int
core_fault_parse_one(const char *s, size_t len, struct core_fault *f)
{
    char buf[128], *colon, *end;
    unsigned long n;
    long status = 0;

    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    colon = strchr(buf, ':');
    if (!colon || colon == buf || (size_t)(colon - buf) >= FAULT_NAME)
        return -1;
    *colon = '\0';
    if (colon[1] < '0' || colon[1] > '9')
        return -1;
    errno = 0;
    n = strtoul(colon + 1, &end, 10);
    if (errno || n == 0)
        return -1;
    f->from_nth = 0;
    if (*end == '+') {
        f->from_nth = 1;
        end++;
    }
    f->partial = 0;
    if (*end == ':' && end[1] >= '0' && end[1] <= '9') {
        status = strtol(end + 1, &end, 10);
        if (status <= 0 || status > INT_MAX)
            return -1;
    }
    if (strcmp(end, ":partial") == 0) {
        f->partial = 1;
        end += strlen(end);
    }
    if (*end)
        return -1;
    /* The name (ended at the colon) was checked to fit. */
    memcpy(f->what, buf, (size_t)(colon - buf) + 1);
    f->nth = n;
    f->status = (int)status;
    return 0;
}

static void
core_fault_load(void)
{
    const char *env = secure_getenv("AMPSHIM_EMU_FAIL");
    const char *p = env;
    int bad = 0;

    while (p && *p && faults.n < FAULT_MAX) {
        size_t len = strcspn(p, ",");

        if (core_fault_parse_one(p, len, &faults.entries[faults.n]) == 0)
            faults.n++;
        else
            bad = 1;
        p += len;
        if (*p == ',')
            p++;
    }
    if (bad)
        fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_FAIL=%s has a malformed "
                "entry (expected what:N[+][:status][:partial], comma-separated, "
                "N from 1); malformed entries are ignored\n", env);
}

int
emu_fault(const char *what, int default_status)
{
    return emu_fault_partial(what, default_status, NULL);
}

int
emu_fault_partial(const char *what, int default_status, int *partial)
{
    int i, counter = -1, status = 0;
    unsigned long count;

    if (partial)
        *partial = 0;
    pthread_once(&faults.once, core_fault_load);
    if (faults.n == 0 || !what)
        return 0;
    core_lock();
    for (i = 0; i < faults.nnames; i++)
        if (strcmp(faults.names[i], what) == 0)
            counter = i;
    if (counter < 0) {
        for (i = 0; i < faults.n; i++)
            if (strcmp(faults.entries[i].what, what) == 0)
                break;
        if (i == faults.n || faults.nnames == FAULT_MAX)
            goto out;   /* nothing asks for this name: no need to count */
        counter = faults.nnames++;
        snprintf(faults.names[counter], FAULT_NAME, "%s", what);
    }
    count = ++faults.counts[counter];
    for (i = 0; i < faults.n && !status; i++) {
        const struct core_fault *f = &faults.entries[i];

        if (strcmp(f->what, what) != 0)
            continue;
        if (count == f->nth || (f->from_nth && count > f->nth)) {
            status = f->status ? f->status : default_status;
            if (partial)
                *partial = f->partial;
        }
    }
out:
    core_unlock();
    return status;
}
