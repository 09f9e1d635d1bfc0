/* What the disk tier holds, by kind, for zecache stats and verify, without
 * reading every entry: the tier keeps the figures of its shard directories
 * (k0/k1) in ZC_ACCOUNTING_FILE_NAME, updated under config.file's lock by
 * every store, removal and recording, and lists only the root (the driver's
 * own flat files) when asked. The file is never trusted blindly: its total
 * plus the root's must equal config.file's, else it is rebuilt from a scan.
 *
 * ZC_ACCOUNTING_FILE_NAME, little-endian, ZC_ACCOUNTING_FILE_SIZE bytes:
 *   0  magic "ZCACCT\0\1"   8 (a first byte of 0: a change under way)
 *   8  format version (u32)  = ZC_ACCOUNTING_FORMAT_VERSION
 *  12  file size (u32)       = ZC_ACCOUNTING_FILE_SIZE
 *  16  the figures           ZC_ACCOUNTING_FIGURE_COUNT u64, in the order of
 *                            zc_disk_figures' fields
 *  16 + 8 * count  checksum  16: first 16 bytes of SHA-256 of all before it
 */
#ifndef ZECACHE_DISK_FIGURES_H
#define ZECACHE_DISK_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/disk_maintenance.h"

#define ZC_ACCOUNTING_FILE_NAME "zecache.accounting"
#define ZC_ACCOUNTING_FORMAT_VERSION 1u
#define ZC_ACCOUNTING_FIGURE_COUNT 12u
#define ZC_ACCOUNTING_FILE_SIZE (16u + 8u * ZC_ACCOUNTING_FIGURE_COUNT + 16u)

typedef struct zc_disk_figures {
    zc_disk_usage counted;       /* what counts against the limit, as a scan finds it */
    uint64_t opencl_entries;     /* .cl_cache files among counted.entries */
    uint64_t foreign_entries;    /* entries not named after a zecache key: the driver's own */
    uint64_t file_bytes;         /* the entry files alone, without their sidecars */
    uint64_t readable_bytes;     /* entry files of ours whose header reads */
    uint64_t uncompressed_bytes; /* their binaries and build logs, uncompressed */
} zc_disk_figures;

/* The figures of the whole directory: the accounting file's and the root's,
 * under a shared lock on config.file, whose value *recorded is (when
 * *recorded_valid). When the accounting file is missing, damaged or does not
 * add up to config.file, the figures come from one scan instead, which also
 * rewrites the file, and *rebuilt is set (and the reason logged). */
zc_status zc_disk_tier_figures(zc_disk_tier *tier, zc_disk_figures *figures, uint64_t *recorded,
                               bool *recorded_valid, bool *rebuilt);

/* The accounting file's figures and the root's, checked, never rebuilt:
 * ZC_MISS with the reason when the file is missing, damaged or does not add
 * up to config.file. */
zc_status zc_disk_tier_accounted_figures(zc_disk_tier *tier, zc_disk_figures *figures, char *reason,
                                         size_t reason_size);

/* From one scan that reads every entry's header, without the lock. */
zc_status zc_disk_tier_scanned_figures(zc_disk_tier *tier, zc_disk_figures *figures);

/* Under the lock: one scan, and the accounting file rewritten from it. */
zc_status zc_disk_tier_rebuild_figures(zc_disk_tier *tier, zc_disk_figures *figures);

/* Pure, for the tests: the file's bytes to the figures
 * (ZC_MISS with the reason when anything is off) and back. */
zc_status zc_disk_parse_accounting(const void *bytes, size_t size, zc_disk_figures *figures,
                                   char *reason, size_t reason_size);
void zc_disk_encode_accounting(const zc_disk_figures *figures,
                               uint8_t bytes[ZC_ACCOUNTING_FILE_SIZE]);

#endif
