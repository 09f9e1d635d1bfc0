/* A large entry loaded from its file frame by frame, each frame read into a
 * small buffer and decompressed (or, stored, copied) from there straight
 * into the artifact: no buffer of the whole file, so a 50 MB hit neither
 * faults in a second 50 MB nor passes every byte through memory twice
 * more, and the frames are read in parallel. Internal to local/. */
#ifndef ZECACHE_ENTRY_FILE_H
#define ZECACHE_ENTRY_FILE_H

#include <stdint.h>

#include "fs_ops.h"
#include "zecache/artifact.h"
#include "zecache/key.h"
#include "zecache/status.h"

/* Smaller files are read whole: one read costs less than finding frames
 * with a read per block header. */
#define ZC_ENTRY_FILE_BY_FRAMES_MIN ((uint64_t)1 << 20)

/* The entry in fd (size bytes, a regular file) as zc_entry_decode would
 * load it, verified as fully: ZC_OK with *out; ZC_ERR_IO when a read
 * failed; anything else (a damaged or unusual entry: a signed one, frames
 * split into a great many blocks) declines, leaving the verdict and its
 * reason to zc_entry_decode of the whole file. */
zc_status zc_entry_load_file(const zc_fs_ops *ops, int fd, uint64_t size, const zc_key *expected,
                             uint64_t max_payload, zc_artifact **out);

#endif
