/* What the driver and its compiler read from the process's environment (and
 * their settings files) that can change a compile, taken once per process:
 * they read it once, so later changes would only key values nobody uses.
 *
 * The driver's part is taken when zc_environment_snapshot_driver is first
 * called or at the first key, whichever comes first; the compiler's part at
 * the first key (or proposed earlier, see below). zc_key_add_environment
 * (key.h) puts both in a key. */
#ifndef ZECACHE_ENVIRONMENT_H
#define ZECACHE_ENVIRONMENT_H

/* Takes the driver's part now unless it is taken already. A Level Zero layer
 * calls it when the driver has just read its settings (the driver library
 * reads its debug keys when it is loaded, the rest in zeInit). */
void zc_environment_snapshot_driver(void);

/* Takes the compiler's part now, as a proposal for the first key, which
 * adopts it when the IGC_* variables are still the same and takes the part
 * anew otherwise (IGC reads its settings at its first compile, after both).
 * Its settings file is then the one read now: the first key no longer opens
 * it, which on 26.27 cost 12 us more as the process's first open of that path
 * than later. For a layer's warm-up; does nothing once the part is taken. */
void zc_environment_propose_compiler_part(void);

#endif
