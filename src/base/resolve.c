/* Resolution of real vendor functions: RTLD_NEXT, then RTLD_NOLOAD,
 * through the C library's own dlsym (base/dl_real.c finds it), which the
 * shim interposes. */
#include "base/resolve.h"

#include "base/caller.h"
#include "base/log.h"

#include <dlfcn.h>
#include <stddef.h>

/* ---- The shim's own lookups ----------------------------------------------- */

void *
amp_dlsym(void *handle, const char *name)
{
    amp_real_dl_init();
    return amp_real_dlsym ? amp_real_dlsym(handle, name) : NULL;
}

/* ---- Vendor functions ----------------------------------------------------- */

/* 1 when fn is defined by another release of the vendor library whose
 * release soname is (libcublas.so.12's when soname is libcublas.so.13):
 * the global scope may hold it, and its functions take its own handles
 * and descriptors. */
static int
amp_other_release(const char *soname, const void *fn)
{
    for (int lib = 0; lib < AMP_LIB_COUNT; lib++)
        if (amp_lib_release((enum amp_lib)lib, soname) == AMP_RELEASE_OWN)
            return amp_lib_release((enum amp_lib)lib,
                                   amp_object_soname_at(fn)) ==
                   AMP_RELEASE_OTHER;
    return 0;
}

void *
amp_resolve(const char *soname, const char *name)
{
    void *fn = amp_dlsym(RTLD_NEXT, name);
    void *lib;

    if (fn && !amp_other_release(soname, fn))
        return fn;
    lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return NULL;
    fn = amp_dlsym(lib, name);
    /* The program still holds the library; drop only our reference. */
    dlclose(lib);
    return fn;
}

int
amp_resolve_all(const char *soname, const char *const *names,
                void **const *slots, int n)
{
    int missing = 0;
    int i;

    for (i = 0; i < n; i++) {
        *slots[i] = amp_resolve(soname, names[i]);
        if (!*slots[i]) {
            missing++;
            amp_log(AMP_LOG_WARN, "%s not found in %s or the process; "
                    "calls that need it stay FP32", names[i], soname);
        }
    }
    return missing;
}
