// The shim's kernels, their own source from kernels/*.cu compiled for the
// host over emu_cuda_rt.h, and the table the emulated driver finds them in:
// the names of the kernels the sources define (AMP_KERNEL_LIST, generated
// with the includes by scripts/kernel_list.py), each parameter's size and
// alignment and the call from the kernel function's own type; and their
// registers and shared memory from ptxas's report (AMP_KERNEL_RESOURCES).
#include "emu_cuda_rt.h"

#include "amp_kernels_host.h"
#include "amp_kernels_resources.h"

#include "emu_kernels.h"

#include <cstring>
#include <type_traits>
#include <utility>

#if EMU_KERNELS_TRACKED
#define EMU_NOT_TRACKED __attribute__((no_sanitize("kernel-address")))
#else
#define EMU_NOT_TRACKED
#endif

namespace {

// A kernel's function type, taken apart: how many parameters, their sizes
// and alignments, and a call that unpacks the launch's parameter copies.
template <typename F, F *fn> struct emu_sig;

template <typename... A, void (*fn)(A...)> struct emu_sig<void(A...), fn> {
    static_assert(sizeof...(A) <= EMU_KERNEL_MAX_PARAMS,
                  "a kernel has more parameters than a launch copies");

    // The copies of the launch's parameters, host memory, are not the
    // kernel's accesses: no call to the device window for them (where the
    // kernels are built to make such calls). The kernel itself keeps its
    // calls: neither compiler inlines a function built with the
    // instrumentation into one built without it.
    template <std::size_t... I>
    EMU_NOT_TRACKED static void
    call(void *const *params, std::index_sequence<I...>)
    {
        fn(*static_cast<const A *>(params[I])...);
    }

    EMU_NOT_TRACKED static void
    entry(void *const *params)
    {
        call(params, std::index_sequence_for<A...>{});
    }

    template <std::size_t... I>
    static constexpr unsigned
    pointers(std::index_sequence<I...>)
    {
        return (0u | ... | (std::is_pointer<A>::value ? 1u << I : 0u));
    }

    static constexpr emu_kernel
    describe(const char *name)
    {
        return emu_kernel{name, (int)sizeof...(A), {sizeof(A)...},
                          {alignof(A)...},
                          pointers(std::index_sequence_for<A...>{}), entry};
    }
};

} // namespace

#define EMU_KERNEL(name) \
    emu_sig<decltype(name), name>::describe(#name),

extern "C" const struct emu_kernel emu_kernels[] = {
    AMP_KERNEL_LIST(EMU_KERNEL)
    emu_kernel{nullptr, 0, {0}, {0}, 0, nullptr},
};

#ifndef EMU_KERNELS_TRACKED
#define EMU_KERNELS_TRACKED 0
#endif
extern "C" const int emu_kernels_tracked = EMU_KERNELS_TRACKED;

extern "C" const struct emu_kernel *
emu_kernel_find(const char *name)
{
    for (const emu_kernel *k = emu_kernels; k->name; k++)
        if (std::strcmp(k->name, name) == 0)
            return k;
    return nullptr;
}

extern "C" void
emu_kernel_resources(const struct emu_kernel *k, int *registers,
                     int *shared_bytes)
{
    static const struct {
        const char *name;
        int registers, shared_bytes;
    } table[] = {
#define EMU_RESOURCES(name, registers, shared) {#name, registers, shared},
        AMP_KERNEL_RESOURCES(EMU_RESOURCES)
#undef EMU_RESOURCES
    };

    *registers = *shared_bytes = 0;
    for (const auto &r : table)
        if (std::strcmp(r.name, k->name) == 0) {
            *registers = r.registers;
            *shared_bytes = r.shared_bytes;
        }
}
