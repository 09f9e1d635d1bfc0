/* What the driver and its compiler read from the process's environment (and
 * their settings files) that can change a compile, taken once per process:
 * they read it once, so later changes would only key values nobody uses.
 *
 * The driver's part is taken when zc_environment_snapshot_driver is first
 * called or at the first key, whichever comes first; the compiler's part at
 * the first key. zc_key_add_environment (key.h) puts both in a key. */
#ifndef ZECACHE_ENVIRONMENT_H
#define ZECACHE_ENVIRONMENT_H

/* Takes the driver's part now unless it is taken already. A Level Zero layer
 * calls it when the driver has just read its settings (the driver library
 * reads its debug keys when it is loaded, the rest in zeInit). */
void zc_environment_snapshot_driver(void);

/* Reads what the compiler's part holds and drops it: the part itself is still
 * taken at the first key (IGC reads its settings at its first compile), but
 * no longer as the process's first open of IGC's options file, which cost
 * 12 us more than later ones on 26.27. For a layer's warm-up. */
void zc_environment_rehearse_compiler_part(void);

#endif
