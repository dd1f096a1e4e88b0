/* Runs a launch of a host-compiled kernel: every block of the grid in turn,
 * each of its threads a fiber that runs until it reaches a barrier
 * (__syncthreads) or ends. When every thread of the block has, the next
 * phase starts. AMPSHIM_EMU_SHUFFLE=SEED shuffles the order of the threads
 * in every phase, so that a missing barrier shows.
 *
 * A fiber takes a stack when it first runs and gives it back when it ends;
 * a thread that ends runs the next one that has not started on the same
 * stack, without a switch, so a kernel without barriers runs each block
 * as a loop over its threads on one stack, warm in the cache, and a kernel
 * with barriers holds one stack per thread only while its threads wait. */
#include "core_state.h"
#include "emu_kernels.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMU_TSAN 1
#endif
#endif

#ifdef EMU_TSAN
#include <sanitizer/tsan_interface.h>
/* TSan follows a switch as a change of fiber. This file is built without
 * TSan's records of calls (meson.build): a thread that ends never returns
 * from the functions that switch, and its stack, with its TSan fiber,
 * serves the next thread. */
#endif

#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* ASan's frames are larger. */
#define EMU_STACK_BYTES ((size_t)256 << 10)
#else
#define EMU_STACK_BYTES ((size_t)64 << 10)
#endif

struct emu_dim3 emu_thread_idx, emu_block_idx, emu_block_dim, emu_grid_dim;

struct emu_fiber {
#if defined(__x86_64__)
    void *sp;                   /* saved stack pointer */
#else
    ucontext_t uc;
#endif
    unsigned char *stack;       /* lowest usable byte; NULL before it runs */
    struct emu_dim3 idx;        /* threadIdx */
    int done;
};

/* The running launch. Used under the core lock only. */
static struct {
    const struct emu_grid *launch;
    void **params;              /* the launch's, pointers as the kernel
                                 * gets them (core_kernel_alias) */
    struct emu_fiber *fibers;
    unsigned *order;
    unsigned char *stacks;      /* fibers' stacks, each above a guard page */
    unsigned char **free_stacks; /* stacks no fiber holds, last freed on top */
#ifdef EMU_TSAN
    void **tsan_fibers;         /* TSan's fiber of each stack, made on use */
    void *tsan_scheduler;       /* the launching thread's */
#endif
    unsigned nfree;
    unsigned nfibers;           /* fibers (and stacks) allocated */
    struct emu_fiber *cur;      /* the fiber that runs, NULL in the scheduler */
    struct emu_fiber *dead;     /* ended; its stack is freed after the switch */
    unsigned nthreads;          /* threads of a block */
    unsigned live;              /* the block's threads that have not ended */
    unsigned pos;               /* the running thread's place in the order */
    int any;                    /* a thread of this phase passed non-zero */
    int barrier_or;             /* __syncthreads_or of the last barrier */
    int from_scheduler;         /* the switch under way left the scheduler */
#if defined(__x86_64__)
    void *sched_sp;
#else
    ucontext_t sched_uc;
#endif
    const void *sched_bottom;   /* the scheduler's stack, for ASan */
    size_t sched_size;
    int shuffle_read;
    uint64_t shuffle;           /* generator state; 0: threads in order */
} grid;

static size_t
emu_page(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- Switching stacks ---------------------------------------------------- */

/* A fiber's life: the thread's kernel call, then back to the scheduler. */
void emu_fiber_main(struct emu_fiber *f)
    __attribute__((visibility("hidden"), noreturn, used));

#if defined(__x86_64__)
/* emu_fiber_swap(save, to): saves the callee-saved registers and the stack
 * pointer in *save and continues on stack `to`. A new fiber's stack starts
 * in emu_fiber_start with the fiber in r12. */
void emu_fiber_swap(void **save, void *to);

__asm__(".text\n"
        ".globl emu_fiber_swap\n"
        ".hidden emu_fiber_swap\n"
        ".type emu_fiber_swap, @function\n"
        "emu_fiber_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size emu_fiber_swap, .-emu_fiber_swap\n"
        ".type emu_fiber_start, @function\n"
        "emu_fiber_start:\n"
        "    movq %r12, %rdi\n"
        "    call emu_fiber_main\n"
        "    ud2\n"
        ".size emu_fiber_start, .-emu_fiber_start\n");

extern const char emu_fiber_start[] __attribute__((visibility("hidden")));

static void
emu_fiber_init(struct emu_fiber *f)
{
    /* The frame emu_fiber_swap pops: r15, r14, r13, r12 (the fiber), rbx,
     * rbp, then emu_fiber_start as the return address; 72 bytes below a
     * 16-byte aligned top leaves the stack aligned at its call. */
    uintptr_t top = ((uintptr_t)f->stack + EMU_STACK_BYTES) & ~(uintptr_t)15;
    void **sp = (void **)(top - 72);

    sp[0] = sp[1] = sp[2] = NULL;
    sp[3] = f;
    sp[4] = sp[5] = NULL;
    sp[6] = (void *)emu_fiber_start;
    f->sp = sp;
}

/* Saves the running context in `from` and continues in `to` (NULL: the
 * scheduler). */
static void
emu_swap(struct emu_fiber *from, struct emu_fiber *to)
{
    emu_fiber_swap(from ? &from->sp : &grid.sched_sp,
                   to ? to->sp : grid.sched_sp);
}
#else
static void
emu_fiber_entry(void)
{
    emu_fiber_main(grid.cur);
}

static void
emu_fiber_init(struct emu_fiber *f)
{
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = EMU_STACK_BYTES;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, emu_fiber_entry, 0);
}

static void
emu_swap(struct emu_fiber *from, struct emu_fiber *to)
{
    swapcontext(from ? &from->uc : &grid.sched_uc,
                to ? &to->uc : &grid.sched_uc);
}
#endif

/* ASan follows the switches between stacks; `dying` when the fiber that
 * leaves will not come back. */
static void
emu_asan_leave(void **fake_stack, const void *bottom, size_t size)
{
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
    (void)fake_stack, (void)bottom, (void)size;
#endif
}

static void
emu_asan_arrive(void *fake_stack, const void **from_bottom, size_t *from_size)
{
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_size);
#else
    (void)fake_stack, (void)from_bottom, (void)from_size;
#endif
}

/* ---- Handing over between fibers ---------------------------------------- */

#ifdef EMU_TSAN
static size_t
emu_stack_slot(const unsigned char *stack)
{
    return (size_t)(stack - grid.stacks) / (EMU_STACK_BYTES + emu_page());
}

/* Tells TSan the switch to `to` (NULL: the scheduler). */
static void
emu_tsan_switch(const struct emu_fiber *to)
{
    void **fiber = &grid.tsan_scheduler;

    if (to) {
        fiber = &grid.tsan_fibers[emu_stack_slot(to->stack)];
        if (*fiber == NULL)
            *fiber = __tsan_create_fiber(0);
    }
    __tsan_switch_to_fiber(*fiber, 0);
}

/* Forgets the TSan fibers of the stacks whose threads never ended (a
 * fault abandoned them): their call stacks would stay. */
static void
emu_tsan_forget_held(void)
{
    for (unsigned i = 0; i < grid.nthreads; i++) {
        void **fiber;

        if (grid.fibers[i].stack == NULL)
            continue;
        fiber = &grid.tsan_fibers[emu_stack_slot(grid.fibers[i].stack)];
        if (*fiber)
            __tsan_destroy_fiber(*fiber);
        *fiber = NULL;
    }
}

/* A child of fork() has only the thread that forked: TSan forgets the
 * parent's fibers, so their handles must not be used. */
static void
emu_tsan_forget_all(void)
{
    for (unsigned i = 0; i < grid.nfibers; i++)
        grid.tsan_fibers[i] = NULL;
}

__attribute__((constructor)) static void
emu_tsan_at_fork(void)
{
    pthread_atfork(NULL, NULL, emu_tsan_forget_all);
}
#else
static void
emu_tsan_switch(const struct emu_fiber *to)
{
    (void)to;
}

static void
emu_tsan_forget_held(void)
{
}
#endif

/* After a switch, on the stack that now runs: the scheduler's bounds, when
 * it was the one that left (ASan needs them to switch back), and the stack
 * of a fiber that ended, free now that nothing runs on it. */
static void
emu_arrived(void *fake_stack)
{
    const void *from_bottom = NULL;
    size_t from_size = 0;

    emu_asan_arrive(fake_stack, &from_bottom, &from_size);
    if (grid.from_scheduler) {
        grid.sched_bottom = from_bottom;
        grid.sched_size = from_size;
        grid.from_scheduler = 0;
    }
    if (grid.dead) {
        grid.free_stacks[grid.nfree++] = grid.dead->stack;
        grid.dead->stack = NULL;
        grid.dead = NULL;
    }
}

/* Leaves `from` (NULL: the scheduler) for `to` (NULL: the scheduler). A
 * fiber that ended never comes back; a fiber's first run takes a stack.
 * Fibers hand over to each other directly, so a switch returns where the
 * fiber it continues left off, at the same barrier as the one that leaves:
 * the processor predicts it. */
static inline __attribute__((always_inline)) void
emu_switch(struct emu_fiber *from, struct emu_fiber *to)
{
    void *fake_stack = NULL;
    int dying = from && from->done;

    if (to) {
        if (to->stack == NULL) {
            to->stack = grid.free_stacks[--grid.nfree];
            emu_fiber_init(to);
        }
        emu_thread_idx = to->idx;
        emu_asan_leave(dying ? NULL : &fake_stack, to->stack,
                       EMU_STACK_BYTES);
    } else {
        emu_asan_leave(dying ? NULL : &fake_stack, grid.sched_bottom,
                       grid.sched_size);
    }
    if (dying)
        grid.dead = from;
    grid.from_scheduler = from == NULL;
    grid.cur = to;
    emu_tsan_switch(to);
    emu_swap(from, to);
    emu_arrived(fake_stack);
}

/* The next thread of this phase that has not ended, or NULL when the phase
 * is over. */
static struct emu_fiber *
emu_next(void)
{
    for (; grid.pos < grid.nthreads; grid.pos++) {
        struct emu_fiber *f = &grid.fibers[grid.order[grid.pos]];

        if (!f->done)
            return f;
    }
    return NULL;
}

/* Runs thread f, and after it each next thread of the phase that has not
 * started yet, in turn on this stack: a thread that ends without reaching
 * a barrier leaves nothing to keep, so its successor needs no fiber of
 * its own and no switch. A kernel without barriers runs a block as one
 * loop; one with barriers switches only where a thread waits, or where
 * the next one waits already. */
void
emu_fiber_main(struct emu_fiber *f)
{
    struct emu_fiber *next;

    emu_arrived(NULL);
    for (;;) {
        grid.launch->kernel->entry(grid.params);
        f->done = 1;
        grid.live--;
        grid.pos++;
        next = emu_next();
        if (next == NULL || next->stack != NULL)
            break;
        next->stack = f->stack;
        f->stack = NULL;
        f = next;
        grid.cur = f;
        emu_thread_idx = f->idx;
    }
    emu_switch(f, next);
    __builtin_unreachable();
}

int
emu_grid_barrier(int pred)
{
    struct emu_fiber *f = grid.cur;

    grid.any |= pred != 0;
    grid.pos++;
    emu_switch(f, emu_next());
    return grid.barrier_or;
}

void
emu_grid_abandon(void)
{
    /* A fault in a fiber leaves it for the scheduler's stack for good. */
    if (grid.cur) {
        emu_asan_leave(NULL, grid.sched_bottom, grid.sched_size);
        emu_tsan_switch(NULL);
    }
}

/* ---- Fibers and their stacks --------------------------------------------- */

/* Room for n fibers. Fails with -1 when memory is short. */
static int
emu_fibers_reserve(unsigned n)
{
    size_t page = emu_page(), each = EMU_STACK_BYTES + page;
    struct emu_fiber *fibers;
    unsigned *order;
    unsigned char *stacks, **free_stacks;

    if (n <= grid.nfibers)
        return 0;
    fibers = calloc(n, sizeof *fibers);
    order = calloc(n, sizeof *order);
    free_stacks = calloc(n, sizeof *free_stacks);
    stacks = mmap(NULL, each * n, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!fibers || !order || !free_stacks || stacks == MAP_FAILED) {
        free(fibers);
        free(order);
        free(free_stacks);
        if (stacks != MAP_FAILED)
            munmap(stacks, each * n);
        return -1;
    }
    /* A guard page below each stack: an overflow faults, not corrupts. */
    for (unsigned i = 0; i < n; i++)
        mprotect(stacks + i * each, page, PROT_NONE);
#ifdef EMU_TSAN
    {
        void **tsan_fibers = calloc(n, sizeof *tsan_fibers);

        if (tsan_fibers == NULL) {
            free(fibers);
            free(order);
            free(free_stacks);
            munmap(stacks, each * n);
            return -1;
        }
        for (unsigned i = 0; i < grid.nfibers; i++)
            if (grid.tsan_fibers[i])
                __tsan_destroy_fiber(grid.tsan_fibers[i]);
        free(grid.tsan_fibers);
        grid.tsan_fibers = tsan_fibers;
    }
#endif
    free(grid.fibers);
    free(grid.order);
    free(grid.free_stacks);
    if (grid.stacks)
        munmap(grid.stacks, each * grid.nfibers);
    grid.fibers = fibers;
    grid.order = order;
    grid.stacks = stacks;
    grid.free_stacks = free_stacks;
    grid.nfibers = n;
    return 0;
}

/* Every stack free, the first on top; every fiber without one. */
static void
emu_stacks_reset(void)
{
    size_t page = emu_page(), each = EMU_STACK_BYTES + page;

    for (unsigned i = 0; i < grid.nfibers; i++) {
        grid.free_stacks[i] = grid.stacks + (grid.nfibers - 1 - i) * each +
                              page;
        grid.fibers[i].stack = NULL;
    }
    grid.nfree = grid.nfibers;
}

/* Each fiber's threadIdx in a block of the launch's shape. */
static void
emu_thread_indices(const struct emu_grid *l)
{
    unsigned t = 0;

    for (unsigned z = 0; z < l->block[2]; z++)
        for (unsigned y = 0; y < l->block[1]; y++)
            for (unsigned x = 0; x < l->block[0]; x++)
                grid.fibers[t++].idx = (struct emu_dim3){x, y, z};
}

/* ---- Shuffled order ------------------------------------------------------ */

static void
emu_shuffle_read(void)
{
    const char *s = secure_getenv("AMPSHIM_EMU_SHUFFLE");
    unsigned long long seed;
    char *end;

    grid.shuffle_read = 1;
    if (!s || !*s)
        return;
    errno = 0;
    seed = strtoull(s, &end, 10);
    if (errno || *end) {
        fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_SHUFFLE=%s is not a seed "
                "(accepted: a decimal number); threads run in order\n", s);
        return;
    }
    /* splitmix64 of the seed: never 0, as xorshift needs. */
    seed += 0x9e3779b97f4a7c15ull;
    seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ull;
    seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebull;
    grid.shuffle = (seed ^ (seed >> 31)) | 1;
}

static uint64_t
emu_shuffle_next(void)
{
    uint64_t x = grid.shuffle;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    grid.shuffle = x;
    return x;
}

/* The order of the block's n threads in the next phase. */
static void
emu_order(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        grid.order[i] = i;
    if (!grid.shuffle)
        return;
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = (unsigned)(emu_shuffle_next() % (i + 1));
        unsigned t = grid.order[i];

        grid.order[i] = grid.order[j];
        grid.order[j] = t;
    }
}

/* ---- Blocks and the grid ------------------------------------------------- */

/* Runs the current block's n threads, phase by phase: each phase starts
 * its first thread, and the threads hand over to each other until the last
 * comes back here. */
static void
emu_run_block(unsigned n)
{
    for (unsigned t = 0; t < n; t++)
        grid.fibers[t].done = 0;
    grid.nthreads = n;
    grid.live = n;
    while (grid.live > 0) {
        emu_order(n);
        grid.pos = 0;
        grid.any = 0;
        emu_switch(NULL, emu_next());
        grid.barrier_or = grid.any;
    }
}

static void
emu_run_blocks(const struct emu_grid *l)
{
    unsigned n = l->block[0] * l->block[1] * l->block[2];

    for (unsigned z = 0; z < l->grid[2]; z++)
        for (unsigned y = 0; y < l->grid[1]; y++)
            for (unsigned x = 0; x < l->grid[0]; x++) {
                emu_block_idx = (struct emu_dim3){x, y, z};
                emu_run_block(n);
            }
}

/* The index of a pointer parameter the device could not dereference, or
 * -1. The window opens only the device's memory; host memory is open to
 * the kernel's host code anyway, so a host pointer is refused here. */
static int
emu_bad_pointer(const struct emu_grid *l)
{
    for (int i = 0; i < l->kernel->nparams; i++) {
        const void *p;

        if (!(l->kernel->pointer_params & 1u << i))
            continue;
        memcpy(&p, l->params[i], sizeof p);
        if (!core_kernel_reachable(p))
            return i;
    }
    return -1;
}

CUresult
emu_grid_run(const struct emu_grid *l, double *bytes)
{
    static sigjmp_buf on_fault;
    unsigned n = l->block[0] * l->block[1] * l->block[2];
    void *params[EMU_KERNEL_MAX_PARAMS], *alias[EMU_KERNEL_MAX_PARAMS];
    /* Set on both sides of the jump: volatile keeps it out of a
     * register that siglongjmp restores. */
    volatile CUresult rc = CUDA_SUCCESS;

    *bytes = 0.0;
    if (!grid.shuffle_read)
        emu_shuffle_read();
    if (emu_bad_pointer(l) >= 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (emu_fibers_reserve(n) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    emu_stacks_reset();
    emu_thread_indices(l);
#ifdef EMU_TSAN
    grid.tsan_scheduler = __tsan_get_current_fiber();
#endif
    grid.launch = l;
    emu_block_dim = (struct emu_dim3){l->block[0], l->block[1], l->block[2]};
    emu_grid_dim = (struct emu_dim3){l->grid[0], l->grid[1], l->grid[2]};
    if (sigsetjmp(on_fault, 1) == 0) {
        core_window_open(&on_fault);
        /* Pointer parameters into device memory as the kernel reaches
         * them through the open window. */
        for (int i = 0; i < l->kernel->nparams; i++) {
            params[i] = l->params[i];
            if (l->kernel->pointer_params & 1u << i) {
                void *p;

                memcpy(&p, l->params[i], sizeof p);
                alias[i] = core_kernel_alias(p);
                if (alias[i] != p)
                    params[i] = &alias[i];
            }
        }
        grid.params = params;
        emu_run_blocks(l);
    } else {
        /* A thread touched memory outside every allocation: the launch
         * ends there, as a kernel does on a GPU. */
        emu_asan_arrive(NULL, NULL, NULL);
        emu_tsan_forget_held();
        grid.cur = NULL;
        grid.dead = NULL;
        rc = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    *bytes = core_window_close();
    grid.launch = NULL;
    grid.params = NULL;
    return rc;
}
