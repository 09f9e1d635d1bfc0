/* LD_PRELOAD for test_opencl_parity: a build system rewriting a header while
 * the driver compiles. The first open of a file named $ZC_SWAP_NAME without
 * O_NONBLOCK (the key opens headers with it; PoCL's in-process clang does
 * not) first writes $ZC_SWAP_TEXT into it: the key read the old header, the
 * driver reads the new one. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_bool swapped;

static void swap_if_named(const char *path, int flags)
{
    const char *name = getenv("ZC_SWAP_NAME"), *text = getenv("ZC_SWAP_TEXT");
    if (name == NULL || text == NULL || path == NULL || (flags & O_NONBLOCK) != 0)
        return;
    const char *base = strrchr(path, '/');
    /* Only a header there: the compiler also looks where there is none. */
    if (strcmp(base != NULL ? base + 1 : path, name) != 0 || access(path, F_OK) != 0 ||
        atomic_exchange(&swapped, true))
        return;
    FILE *file = fopen(path, "w");
    if (file == NULL)
        return;
    fputs(text, file);
    fclose(file);
}

typedef int (*openat_fn)(int, const char *, int, ...);

/* open(path, ...) is openat(AT_FDCWD, path, ...): every variant goes to the
 * real openat (real names openat or openat64). */
static int swap_and_open(const char *real, int dir, const char *path, int flags, va_list args)
{
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? (mode_t)va_arg(args, int) : 0;
    swap_if_named(path, flags);
    return ((openat_fn)dlsym(RTLD_NEXT, real))(dir, path, flags, mode);
}

#define OPEN_WRAPPER(name, real)                                                                   \
    int name(const char *path, int flags, ...)                                                     \
    {                                                                                              \
        va_list args;                                                                              \
        va_start(args, flags);                                                                     \
        int fd = swap_and_open(real, AT_FDCWD, path, flags, args);                                 \
        va_end(args);                                                                              \
        return fd;                                                                                 \
    }

#define OPENAT_WRAPPER(name)                                                                       \
    int name(int dir, const char *path, int flags, ...)                                            \
    {                                                                                              \
        va_list args;                                                                              \
        va_start(args, flags);                                                                     \
        int fd = swap_and_open(#name, dir, path, flags, args);                                     \
        va_end(args);                                                                              \
        return fd;                                                                                 \
    }

OPEN_WRAPPER(open, "openat")
OPEN_WRAPPER(open64, "openat64")
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

/* What callers built with _FORTIFY_SOURCE call. */
typedef int (*fortified_open_fn)(const char *, int);
typedef int (*fortified_openat_fn)(int, const char *, int);

#define FORTIFIED_OPEN_WRAPPER(name)                                                               \
    int name(const char *path, int flags)                                                          \
    {                                                                                              \
        swap_if_named(path, flags);                                                                \
        return ((fortified_open_fn)dlsym(RTLD_NEXT, #name))(path, flags);                          \
    }

#define FORTIFIED_OPENAT_WRAPPER(name)                                                             \
    int name(int dir, const char *path, int flags)                                                 \
    {                                                                                              \
        swap_if_named(path, flags);                                                                \
        return ((fortified_openat_fn)dlsym(RTLD_NEXT, #name))(dir, path, flags);                   \
    }

FORTIFIED_OPEN_WRAPPER(__open_2)
FORTIFIED_OPEN_WRAPPER(__open64_2)
FORTIFIED_OPENAT_WRAPPER(__openat_2)
FORTIFIED_OPENAT_WRAPPER(__openat64_2)
