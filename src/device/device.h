/* The device layer: the driver API (dlopen'd, never linked), the shim's
 * kernels per context, stream-ordered scratch and kernel launches. */
#ifndef AMP_DEVICE_H
#define AMP_DEVICE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* A device address, as the driver's CUdeviceptr. */
typedef uint64_t amp_devptr;
/* A stream, as the driver's CUstream (NULL: the legacy default stream). */
typedef void *amp_stream;

enum amp_kernel {
    AMP_KERNEL_ABSMAX_F32 = 0,
    AMP_KERNEL_CAST_F32_F16,
    AMP_KERNEL_GEMM_SCALES,
    AMP_KERNEL_GEMM_CAST,
    AMP_KERNEL_GEMM_CAST_DELAYED,
    AMP_KERNEL_GEMM_SPLIT_TF32X3,
    AMP_KERNEL_GEMM_RECAST,
    AMP_KERNEL_FILL_PTRS,
    AMP_KERNEL_GATHER_BATCH,
    AMP_KERNEL_AXPBY_BATCH,
    AMP_KERNEL_F16X3_FOLD,
    AMP_KERNEL_ALPHA_VECTOR,
    AMP_KERNEL_SHADOW_ERROR,
    AMP_KERNEL_CONV_SCALES,
    AMP_KERNEL_CONV_CAST,
    AMP_KERNEL_CONV_CAST_ONE_PASS,
    AMP_KERNEL_CONV_SPLIT_TF32X3,
    AMP_KERNEL_CONV_OUTPUT,
    AMP_KERNEL_CONV_ERROR,
    AMP_KERNEL_CONV_EXCUSE,
    AMP_KERNEL_COUNT,
};

/* The shim's state for one context. */
struct amp_dev;

/* Loads libcuda.so.1 and the driver functions the shim uses. Fails with
 * AMP_ERR_UNAVAILABLE (and stays failed) when either is missing. */
enum amp_status amp_dev_init(void);

/* The state for the calling thread's current context, loading the kernels
 * into it on first use. NULL when there is no current context, or the
 * kernels cannot be used in it (remembered for that context). */
struct amp_dev *amp_dev_current(void);

/* As amp_dev_current, without setting anything up: NULL also when the
 * context's state was not made by an earlier call. For a call whose
 * stream is being captured, where loading a module is not allowed. */
struct amp_dev *amp_dev_current_made(void);

/* ---- Contexts that end ------------------------------------------------------
 * A program may reset or destroy a context the shim has work and state in
 * (cudaDeviceReset, cuDevicePrimaryCtxReset, cuCtxDestroy): the hooks
 * harvest first, then retire the context's state, so that a later context
 * (perhaps at the same address) starts afresh. */

/* The primary context of `device` (a CUcontext) while it is active, NULL
 * when it is not (nothing is made or retained). */
void *amp_dev_primary_context(int device);

/* 1 when the primary context of `device` is active, 0 when not, -1 when
 * the driver cannot tell. */
int amp_dev_primary_active(int device);

/* 1 when the shim has state in some context. */
int amp_dev_any(void);

/* 1 when the shim has state in context `ctx` (it converted a call there). */
int amp_dev_known(void *ctx);

/* Drops the shim's state in `ctx`, which has ended: its entry is never
 * returned again. The caller has harvested its pending work. */
void amp_dev_retire(void *ctx);

/* 1 once dev's context has ended (its handles died with it). */
int amp_dev_retired(const struct amp_dev *dev);

/* The shim's own potentially unsafe calls (loading its kernels, its
 * page-locked memory and events, event queries, its own cuBLAS and cuDNN
 * handles) are made between these, in the RELAXED capture interaction
 * mode: a capture the program runs meanwhile (a global one on another
 * thread, or the calling thread's own on another stream) is not
 * invalidated by them. They are never made for a call whose own stream is
 * capturing. amp_dev_relax returns what amp_dev_unrelax restores. */
int amp_dev_relax(void);
void amp_dev_unrelax(int token);

/* 1 while `stream` is being captured into a graph, 0 when not, -1 when the
 * driver cannot tell. */
int amp_dev_stream_capturing(amp_stream stream);

/* A stream's capture state as a caller found it earlier in the same call,
 * for the functions below that would otherwise ask the driver again: 2 +
 * amp_dev_stream_capturing's answer, or AMP_CAPTURE_ASK when not known. */
#define AMP_CAPTURE_ASK 0
#define AMP_CAPTURE_NONE 2 /* known not to be capturing */

/* amp_dev_stream_capturing's answer for `stream`, taken from `capture`
 * (as above) where known. */
static inline int
amp_dev_capturing_as(int capture, amp_stream stream)
{
    return capture != AMP_CAPTURE_ASK ? capture - 2
                                      : amp_dev_stream_capturing(stream);
}

/* The graph `stream` is being captured into (an active capture: a
 * CUgraph), or NULL when it is not or the driver cannot tell. */
void *amp_dev_capture_graph(amp_stream stream);

/* Scratch usable by work queued on `stream` after the call, freed when
 * `stream` reaches amp_dev_free_async: stream-ordered memory of a pool of
 * the shim's own, or, when `stream` is being captured, memory the graph
 * owns (*in_graph set; see device.c). `capture`: the stream's capture
 * state where the caller knows it (AMP_CAPTURE_ASK). */
enum amp_status amp_dev_alloc_async(struct amp_dev *dev, size_t bytes,
                                    amp_stream stream, int capture,
                                    amp_devptr *ptr, int *in_graph);
void amp_dev_free_async(amp_devptr ptr, amp_stream stream, int in_graph);

/* Parts of one scratch allocation: places `bytes` at the end of a scratch
 * of *total bytes, AMP_SCRATCH_ALIGN-aligned, and returns the part's
 * offset. On overflow, or once *total has overflowed, *total and the
 * offset are SIZE_MAX. */
#define AMP_SCRATCH_ALIGN 256
size_t amp_scratch_part(size_t *total, size_t bytes);

enum amp_status amp_dev_memset32_async(amp_devptr ptr, uint32_t value,
                                       size_t count, amp_stream stream);

/* Queues a device-to-device copy of `bytes` on `stream` (capture-legal). */
enum amp_status amp_dev_copy_async(amp_devptr dst, amp_devptr src,
                                   size_t bytes, amp_stream stream);

/* Blocks of a grid-stride launch of kernel k over n elements: one per
 * AMP_KERNEL_BLOCK elements, but at most one full wave of k on dev's
 * device (its multiprocessors times the blocks of k that fit on one, as
 * the driver's occupancy calculation says): a larger grid keeps no more
 * threads resident and ends in a partial wave. AMP_KERNEL_MAX_GRID where
 * the driver did not say. */
unsigned amp_dev_grid(const struct amp_dev *dev, enum amp_kernel k,
                      int64_t n);

/* Queues kernel k on `stream` with a 1-D grid; params as for
 * cuLaunchKernel. */
enum amp_status amp_dev_launch(struct amp_dev *dev, enum amp_kernel k,
                               unsigned grid, unsigned block,
                               amp_stream stream, void **params);

/* ---- Slots: page-locked host memory that device work writes ------------ */

/* Slots of a context's first block, blocks at most (each twice the
 * slots of the one before: 16,320 slots in all), and bytes per slot. */
#define AMP_DEV_SLOTS 64
#define AMP_DEV_SLOT_BLOCKS 8
#define AMP_DEV_SLOT_BYTES 64

/* Takes a free slot of dev: *at is its address, the same on the host and
 * the device (unified addressing). The slots' memory and events are made
 * on first use, in dev's context, which is current, and another block of
 * them whenever every slot is taken (a device far behind the host holds
 * as many as it has calls queued). Fails with AMP_ERR_UNAVAILABLE when
 * every slot is taken and no block can be added, or AMP_ERR_DRIVER when
 * the first block's memory or events cannot be had (remembered: no
 * further attempts). */
enum amp_status amp_dev_slot_take(struct amp_dev *dev, int *slot,
                                  amp_devptr *at);

/* Records the slot's event on `stream`, after the work that writes it. */
enum amp_status amp_dev_slot_record(struct amp_dev *dev, int slot,
                                    amp_stream stream);

/* 1 when the work before the slot's record has finished (with `wait`,
 * after waiting for it), 0 when not yet, -1 when it failed. Works from any
 * thread: dev's context is made current for the query. */
int amp_dev_slot_done(struct amp_dev *dev, int slot, int wait);

/* Gives the slot back. */
void amp_dev_slot_release(struct amp_dev *dev, int slot);

/* ---- Records: small device state kept between calls --------------------
 * A converted call that repeats (the same site, shape and stream) keeps
 * what its next call needs (the delayed scales of an FP16 GEMM) in a
 * record: AMP_DEV_RECORD_BYTES of device memory in one allocation per
 * context, made on first use (not zeroed: a record's first call sets what
 * the later ones read) and kept for the context's life, as the slots and
 * events are. A record belongs to one stream, named by its id
 * (cuStreamGetId, never reused, where a handle's address is): work on it
 * is stream-ordered, so no two kernels use a record at once; a record
 * changes hands only between keys of one stream, and a key's later calls
 * get it only once its first call's work is queued
 * (amp_dev_record_ready). A record let go (a failed first call, a stream
 * that ends) drains: only its stream may take it until a timing event
 * recorded after its last kernel has finished. */
#define AMP_DEV_RECORDS 256
#define AMP_DEV_RECORD_BYTES 64
/* Places of the table tried for a key. */
#define AMP_DEV_RECORD_PROBES 8

/* The record of (key, stream) in dev, whose context is current: *at its
 * device address; *fresh 1 when it was not the key's before (its contents
 * are another key's, or whatever the memory held): the caller queues the
 * work that sets it, then calls amp_dev_record_ready or, having failed,
 * amp_dev_record_drop; 0 when an earlier call of the key set it.
 * AMP_ERR_UNAVAILABLE for a stream that is being captured (a graph may
 * replay on any stream) or the per-thread default stream (one handle,
 * several streams), while the key's first call is not queued yet, when
 * the places the key may take are held by other streams or drain their
 * kernels, or when the driver cannot name the stream; AMP_ERR_DRIVER when
 * the memory cannot be had (remembered). `capture`: the stream's capture
 * state where the caller knows it (AMP_CAPTURE_ASK). */
enum amp_status amp_dev_record(struct amp_dev *dev, uint64_t key,
                               amp_stream stream, int capture,
                               amp_devptr *at, int *fresh);

/* The key's first call at `at` is queued: its later calls may use it. */
void amp_dev_record_ready(struct amp_dev *dev, amp_devptr at, uint64_t key);

/* Gives up the record at `at` (a first call that failed; some of its
 * kernels, queued on `stream`, may still write the record): the key's
 * next call finds it fresh, and the record drains. */
void amp_dev_record_drop(struct amp_dev *dev, amp_devptr at, uint64_t key,
                         amp_stream stream);

/* `stream`, of the current context, is about to be destroyed: its
 * records drain, and then serve other streams (its id never comes back).
 * Called before the destruction, while work can still be queued on it. */
void amp_dev_stream_ending(amp_stream stream);

/* ---- Timing events: a pool per context ------------------------------------ */

/* Timing events per context at most. */
#define AMP_DEV_EVENTS 2048

/* Takes a free timing event of dev (an index), creating one only when none
 * is free: in steady state the pool recycles. dev's context is current.
 * Fails with AMP_ERR_UNAVAILABLE when the pool is exhausted or events
 * cannot be made. */
enum amp_status amp_dev_event_take(struct amp_dev *dev, int *event);

/* Records the event on `stream`. */
enum amp_status amp_dev_event_record(struct amp_dev *dev, int event,
                                     amp_stream stream);

/* As amp_dev_slot_done, for a timing event. */
int amp_dev_event_done(struct amp_dev *dev, int event, int wait);

/* Milliseconds from event `from` to event `to`, both finished. */
enum amp_status amp_dev_event_elapsed(struct amp_dev *dev, int from, int to,
                                      double *ms);

/* The work between events `from` and `to`, both finished: their elapsed
 * time less the cost of recording one event, as dev measured it when it
 * was set up (a span no longer than that is left as measured). */
enum amp_status amp_dev_event_span(struct amp_dev *dev, int from, int to,
                                   double *ms);

/* That cost in milliseconds; 0 when not known. */
double amp_dev_event_overhead_ms(const struct amp_dev *dev);

/* Gives the event back to the pool. */
void amp_dev_event_release(struct amp_dev *dev, int event);

/* The context's time origin for traces: an event recorded on `stream` the
 * first time this is asked (dev's context current); -1 when none can be
 * had. */
int amp_dev_epoch(struct amp_dev *dev, amp_stream stream);

/* The device's name (cuDeviceGetName), e.g. "NVIDIA H100 SXM (emulated)". */
const char *amp_dev_name(const struct amp_dev *dev);

/* The major of the compute capability of dev's device (9 for Hopper); 0
 * when the driver did not say. */
int amp_dev_cc_major(const struct amp_dev *dev);
/* ... and its minor (0 for 9.0). */
int amp_dev_cc_minor(const struct amp_dev *dev);

/* 1 when cuBLAS runs its BF16x9 emulation of FP32 on dev's device
 * (CUBLAS_COMPUTE_32F_EMULATED_16BFX9): compute capability 10.0 or 10.3,
 * B200/GB200 and B300/GB300; on other GPUs cuBLAS accepts the compute
 * type and computes plain FP32. 0 for NULL. */
int amp_dev_bf16x9(const struct amp_dev *dev);

/* The rule amp_dev_bf16x9 applies, for a compute capability known
 * otherwise (a report's). */
int amp_cc_bf16x9(int major, int minor);

/* The device (its ordinal, a CUdevice) of dev's context. */
int amp_dev_ordinal(const struct amp_dev *dev);

/* The device of the calling thread's current context, without setting
 * anything up in it; -1 with no context or driver. Cheap: one driver call
 * while the thread stays in one context. */
int amp_dev_current_ordinal(void);

/* The name of device `ordinal`: as amp_dev_name for a device the shim set
 * up, else the driver's; AMP_ERR_UNAVAILABLE when neither knows it. */
enum amp_status amp_dev_ordinal_name(int ordinal, char *name, size_t cap);

/* Makes dev's context current on the calling thread (pushes it), for the
 * shim's work on an object of that context while another may be current;
 * 0, or -1 when it has ended, cannot be pushed, or its address is now
 * another context's (nothing to pop). */
int amp_dev_push(struct amp_dev *dev);
void amp_dev_pop(void);

/* The name of the calling thread's current context's device, without
 * setting anything up in it; AMP_ERR_UNAVAILABLE with no context. */
enum amp_status amp_dev_current_name(char *name, size_t cap);

/* The first context the shim used, or NULL. */
const struct amp_dev *amp_dev_first(void);

/* Forgets every context (a forked child starts clean). */
void amp_dev_forget(void);

#endif
