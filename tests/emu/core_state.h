/* Internal state of the emulated device, shared by core.c (memory, queues,
 * contexts) and driver.c (the driver API on top); never exported. */
#ifndef EMU_CORE_STATE_H
#define EMU_CORE_STATE_H

#include "emu.h"
#include "emu_kernels.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>

#define CORE_MAX_DEVICES 16
#define CORE_ALIGN 256
#define CORE_CTX_STACK 32

/* The modelled GPU: the public roofline entry plus the limits that
 * cuDeviceGetAttribute reports. */
struct core_gpu_spec {
    struct emu_gpu pub;
    int clock_khz;
    int mem_clock_khz;
    int bus_width;
    int l2_bytes;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int smem_per_sm;
    int smem_per_block_optin;
    int pci_bus;
};

const struct core_gpu_spec *core_gpu_spec(void);

/* Completion of one queued op, shared by the op, the stream (its last op),
 * events recorded after it and ops that depend on it. */
/* A vector clock: for each stream, the last of its ops known to come
 * before (by stream order, an event, or a synchronisation of the host). */
struct core_vc {
    int n, cap;
    struct core_vc_entry {
        unsigned long long stream;  /* CUstream_st.id */
        uint64_t seq;
    } *e;
};

struct core_mark {
    int refs;
    int done;
    double end_ns;
    struct CUstream_st *stream; /* valid while !done */
    uint64_t seq;
    struct core_vc vc;          /* what comes before the op, itself included */
};

struct core_qop {
    struct emu_op op;
    uint64_t seq;
    uint64_t order;             /* enqueue order across the context's streams */
    double floor_ns;            /* host-sync floor when it was enqueued */
    struct core_mark *mark;
    struct core_mark **deps;
    int ndeps;
    struct core_qop *next;
};

enum core_stream_kind {
    CORE_STREAM_USER = 0,
    CORE_STREAM_LEGACY,
    CORE_STREAM_PER_THREAD,
};

/* A reference count on a user object (cuUserObjectCreate): its
 * destructor runs once the count is 0, after the driver call that dropped
 * it has returned (graph.c). */
struct CUuserObject_st {
    unsigned refs;
    void *ptr;
    void (*destroy)(void *);
    struct CUuserObject_st *next; /* on the list of those to destroy */
};

struct core_uref {
    struct CUuserObject_st *obj;
    unsigned count;
};

/* Ops recorded by stream capture, shared by a graph, its executables and
 * the child graph nodes that embed it (the emulator's graphs gain nodes
 * only by appending, so sharing the list is a clone). A child graph node
 * is an op of type CU_GRAPH_NODE_TYPE_GRAPH whose arg is the child's
 * list. */
struct core_oplist {
    int refs;
    struct emu_op *ops;
    int n, cap;
    int mem_nodes;              /* its MEM_ALLOC and MEM_FREE nodes */
    struct core_uref *urefs;    /* user objects the graph holds */
    int nurefs, ucap;
    struct core_oplist *shares; /* a clone's original, a reference held:
                                   the arguments of the ops copied from
                                   it are its to release */
};

/* A node handle (cuGraphGetNodes): the graph's op at `index`. */
struct CUgraphNode_st {
    struct CUgraph_st *graph;
    int index;
};

struct CUgraph_st {
    struct CUctx_st *ctx;
    struct core_oplist *list;
    struct CUgraphNode_st **nodes; /* handles given out, by op index */
    int nnodes;
    int execs;                  /* executables of it not yet destroyed */
    struct CUgraph_st *next;
};

struct CUgraphExec_st {
    struct CUctx_st *ctx;
    struct core_oplist *list;
    int n;                      /* the list's ops when instantiated */
    struct CUgraph_st *graph;   /* instantiated from; NULL once destroyed */
    struct CUgraphExec_st *next;
};

struct CUstream_st {
    struct CUctx_st *ctx;
    unsigned long long id;      /* cuStreamGetId: never reused */
    unsigned flags;
    int priority;
    enum core_stream_kind kind;
    pthread_t owner;            /* CORE_STREAM_PER_THREAD only */
    struct core_qop *head, *tail;
    uint64_t next_seq;          /* seq of the last op enqueued */
    uint64_t done_seq;          /* seq of the last op run */
    struct core_mark *last;     /* mark of the last op enqueued, or NULL */
    double clock_ns;
    int destroyed;
    CUstreamCaptureStatus capture;
    CUstreamCaptureMode capture_mode;
    uint64_t capture_id;
    pthread_t capture_thread;
    struct CUgraph_st *graph;   /* being captured into */
    struct CUstream_st *next;
};

struct CUevent_st {
    struct CUctx_st *ctx;
    unsigned flags;
    struct core_mark *mark;     /* latest record, NULL if never recorded */
    uint64_t capture_id;        /* nonzero: last recorded in a capture */
    struct CUevent_st *next;
};

struct CUfunc_st {
    struct CUmod_st *mod;
    const struct emu_kernel *kernel;
    int max_dynamic_smem;       /* opt-in limit set by cuFuncSetAttribute */
    struct CUfunc_st *next;
};

struct CUmod_st {
    struct CUctx_st *ctx;
    const void *image;          /* the caller's image, which must stay valid */
    size_t image_size;          /* 0 when the format does not say */
    int image_compressed;       /* kernel names cannot be searched for */
    struct CUfunc_st *funcs;
    struct CUmod_st *next;
};

struct CUctx_st {
    int dev;
    unsigned long long id;      /* cuCtxGetId: new at each activation */
    int primary;
    int refs;                   /* primary: retain count */
    int active;
    unsigned flags;
    CUresult sticky;            /* first error of a failed op */
    double floor_ns;            /* device time the host has waited for */
    uint64_t next_order;        /* the last core_qop.order given out */
    struct CUstream_st *legacy;
    struct CUstream_st *streams;    /* every stream, legacy included */
    struct CUevent_st *events;
    struct CUmod_st *modules;
    struct CUgraph_st *graphs;
    struct CUgraphExec_st *execs;
    struct CUctx_st *next;
};

/* Whether a query of unfinished work lets it finish (AMPSHIM_EMU_BEHIND,
 * core.c): 1 unless the device runs behind and the host has not polled
 * long enough. */
int core_query_runs(void);

/* The core lock (recursive). */
void core_lock(void);
void core_unlock(void);

int core_initialised(void);
CUresult core_init(void);
int core_device_count(void);

/* The calling thread's current context (NULL if none) and its stack. */
struct CUctx_st *core_tls_current(void);
CUresult core_tls_set_current(struct CUctx_st *ctx);
CUresult core_tls_push(struct CUctx_st *ctx);
struct CUctx_st *core_tls_pop(void);

/* Current context, checked: NOT_INITIALIZED, INVALID_CONTEXT,
 * CONTEXT_IS_DESTROYED. With `sticky`, also the context's sticky error. */
CUresult core_enter(struct CUctx_st **ctx, int sticky);
/* 1 if ctx is a live context handle. */
int core_ctx_valid(struct CUctx_st *ctx);
struct CUctx_st *core_primary(int dev);
CUresult core_primary_retain(int dev, struct CUctx_st **out);
CUresult core_primary_release(int dev);
CUresult core_primary_reset(int dev);
CUresult core_ctx_create(int dev, unsigned flags, struct CUctx_st **out);
CUresult core_ctx_destroy(struct CUctx_st *ctx);

/* Memory. core_alloc fails with OUT_OF_MEMORY; core_free with
 * INVALID_VALUE for a pointer that is not the start of a live allocation. */
CUresult core_alloc(struct CUctx_st *ctx, size_t bytes, int async,
                    CUdeviceptr *out);
CUresult core_free(CUdeviceptr p);
/* core_free of a stream-ordered free as it runs: a cuMemAllocAsync block's
 * pages are kept for the next stream-ordered allocation that fits (see
 * core.c). */
CUresult core_free_keep(CUdeviceptr p);
/* Marks an allocation as being freed by a queued op (INVALID_VALUE if it is
 * not a live allocation or is already being freed). */
CUresult core_free_begin(CUdeviceptr p, int *async);
CUresult core_host_alloc(struct CUctx_st *ctx, size_t bytes, void **out);
CUresult core_host_free(void *p);
/* The allocation containing p: 1 and its fields, else 0. */
int core_find(CUdeviceptr p, CUdeviceptr *base, size_t *size, int *dev,
              int *is_host, struct CUctx_st **ctx);
size_t core_mem_used(int dev);

/* The device window: while a kernel's host code runs, device memory is
 * open to it at its device addresses, a page at a time as threads touch
 * it (a fault opens the page: for reading, or for writing when the access
 * writes). A touch of a device address outside every allocation, or any
 * other fault of the running thread, jumps to *on_fault. Caller holds the
 * lock, and opens one window at a time. */
void core_window_open(sigjmp_buf *on_fault);
/* Ends the launch's window and returns the bytes the kernel read plus the
 * bytes it wrote (each page it touched, counted by what of it lies in its
 * allocation, once for reading and once for writing). Where faults count
 * the pages, they close again here; where the kernels' own calls count
 * them, they stay open to the next launch and close at the outermost
 * core_unlock, before the program's code runs again. */
double core_window_close(void);

/* How the window counts a kernel's pages: "accesses" (the kernels name
 * their loads and stores to it) or "faults". */
const char *core_window_kind(void);
/* The address a kernel's pointer parameter p is handed to the kernel as,
 * once the launch's window is open: where the kernels name their accesses
 * to the window, a device address
 * becomes its alias in the emulator's read-write view, whose pages need
 * no opening (the window counts and checks each access there as at the
 * device address); anything else, and every address where faults count
 * the pages, stays as it is. */
void *core_kernel_alias(void *p);
/* Whether a kernel on the device could dereference p: NULL, an address of
 * the device span, or page-locked host memory. Host code reaches every
 * other host address too, where a GPU would fault. */
int core_kernel_reachable(const void *p);
/* Called from the fault handler before it jumps out of a fiber. */
void emu_grid_abandon(void);

/* The modelled duration of the op that runs, for work whose cost is known
 * only once it ran (a kernel's memory traffic); called from its run(). */
void core_op_set_model_ns(double ns);

/* Streams. */
CUresult core_stream_resolve(struct CUctx_st *ctx, CUstream h,
                             struct CUstream_st **out);
struct CUstream_st *core_stream_lookup(CUstream h);
CUresult core_stream_new(struct CUctx_st *ctx, unsigned flags, int priority,
                         struct CUstream_st **out);
void core_stream_destroy(struct CUstream_st *s);
/* Queues op on s; with mark_out, returns a reference to its mark. Extra
 * dependency `dep` may be NULL. On failure op->release has been called. */
CUresult core_enqueue(struct CUstream_st *s, const struct emu_op *op,
                      struct core_mark *dep, struct core_mark **mark_out);
void core_mark_put(struct core_mark *m);
/* Runs s up to and including its op `seq`. */
void core_run_until(struct CUstream_st *s, uint64_t seq);
/* Host waits: run, move the host floor, return the sticky error. */
CUresult core_sync_stream(struct CUstream_st *s);
CUresult core_sync_mark(struct CUctx_st *ctx, struct core_mark *m);
CUresult core_sync_ctx(struct CUctx_st *ctx);
int core_stream_pending(struct CUstream_st *s);
/* Frees destroyed streams whose work is done. */
void core_reap(struct CUctx_st *ctx);

/* Capture: a potentially unsafe call (one that would synchronise with the
 * device, or allocate or load outside the stream) while a capture forbids
 * it to the calling thread (by the thread's interaction mode, as
 * cuThreadExchangeStreamCaptureMode documents) invalidates that capture
 * and returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; else CUDA_SUCCESS. */
CUresult core_capture_guard(struct CUctx_st *ctx);
/* Sets the calling thread's capture interaction mode; returns the old. */
CUstreamCaptureMode core_capture_exchange(CUstreamCaptureMode mode);
/* Appends op to a graph's list: 0, or -1 out of memory. */
int core_oplist_add(struct core_oplist *list, const struct emu_op *op);
void core_oplist_put(struct core_oplist *list);

/* Graphs (graph.c). core_graph_drop frees a graph already unlinked from
 * its context; core_uobj_put drops count references of a user object
 * (the destructor is queued at 0); core_uobj_run runs the queued
 * destructors, without the lock, as the driver runs them on a thread of
 * its own. */
void core_graph_drop(struct CUgraph_st *graph);
/* Unlinks graph from ctx's list and drops it. */
void core_graph_free(struct CUctx_st *ctx, struct CUgraph_st *graph);
void core_uobj_put(struct CUuserObject_st *obj, unsigned count);
void core_uobj_run(void);

/* Memory pools (mempool.c). Stream-ordered allocations from a pool are
 * counted in it until freed; a synchronisation trims every pool of the
 * context's device to its release threshold. */
struct CUmemPoolHandle_st;
struct CUmemPoolHandle_st *core_pool_current(int dev);
CUresult core_pool_alloc(struct CUmemPoolHandle_st *pool, CUdeviceptr p,
                         size_t bytes);
void core_pool_free(CUdeviceptr p);
void core_pool_trim(int dev);

/* driver.c's entry and exit of a call that needs the current context. */
CUresult drv_enter(struct CUctx_st **ctx, int sticky);
CUresult drv_leave(CUresult rc);

/* Frees a module and its functions (already unlinked from its context). */
void core_module_free(struct CUmod_st *m);

/* Events and modules by handle. */
struct CUevent_st *core_event_lookup(CUevent h);
struct CUmod_st *core_module_lookup(struct CUctx_st *ctx, CUmodule h);
struct CUfunc_st *core_func_lookup(struct CUctx_st *ctx, CUfunction h);

/* Whether fn is one of the generated stubs of the driver's exports
 * (cuda_stubs.c, from scripts/emu_stubs.py): not implemented. */
int emu_stub_address(const void *fn) __attribute__((visibility("hidden")));

#endif
