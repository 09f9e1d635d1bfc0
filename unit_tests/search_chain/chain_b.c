/* The caller of a loader chain, as the driver is: no DT_RPATH or
 * DT_RUNPATH of its own, loaded by chain_a.c's object, which has a
 * DT_RPATH. Its dlopen is searched in that DT_RPATH (glibc's l_loader). */
#include <dlfcn.h>

void *zc_chain_dlopen(const char *name);

/* Not a tail call: glibc takes the object that called dlopen from the
 * return address, which must be in this object. */
void *zc_chain_dlopen(const char *name)
{
    void *handle = dlopen(name, RTLD_NOW);
    __asm__ volatile("" : : "r"(handle) : "memory");
    return handle;
}
