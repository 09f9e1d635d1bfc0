/* Internal to the zecache command-line tool: the command table, option
 * handling shared by every command, and access to the cache.
 *
 *   zecache_main.c   global options, dispatch and help
 *   tool_version.c   --version: the build's options, the libraries' versions
 *   tool_cli.c       per-command option parsing, usage errors, help text
 *   tool_cache.c     opening the cache directory the layer would use
 *   tool_entries.c   listing entries with their headers
 *   tool_pack.c      a pack's entries, listed and checked as a directory's
 *   tool_units.c     sizes, durations and times (tool_support.h)
 *   tool_json.c      JSON output (tool_support.h)
 *   cmd_*.c          one command group each (cmd_remote.c: remote check;
 *                    cmd_bundle.c: export and import; cmd_pack.c: pack) */
#ifndef ZECACHE_TOOL_H
#define ZECACHE_TOOL_H

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/config.h"
#include "zecache/disk_tier.h"
#include "zecache/entry.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"

/* Exit statuses. exec passes the program's own status through; its own
 * failures use the shell's conventions. */
enum {
    TOOL_EXIT_OK = 0,
    TOOL_EXIT_FAILURE = 1, /* the command ran and failed, or found problems */
    TOOL_EXIT_USAGE = 2,   /* bad command line, ambiguous key prefix */
    TOOL_EXIT_NO_LAYER = 125,
    TOOL_EXIT_CANNOT_RUN = 126,
    TOOL_EXIT_NOT_FOUND = 127,
};

typedef struct tool_context tool_context;

typedef struct tool_command {
    const char *name;
    const char *synopsis; /* after "zecache " */
    const char *summary;  /* one line for the command list */
    const char *details;  /* the rest of `zecache help NAME` */
    int (*run)(tool_context *tool, int argc, char **argv);
} tool_command;

struct tool_context {
    const tool_command *command;
    const char *dir_option; /* --dir, also exported as NEO_CACHE_DIR */
};

extern const tool_command tool_cmd_exec, tool_cmd_stats, tool_cmd_zero_stats, tool_cmd_ls,
    tool_cmd_show, tool_cmd_verify, tool_cmd_trim, tool_cmd_clear, tool_cmd_config, tool_cmd_remote,
    tool_cmd_export, tool_cmd_import, tool_cmd_prewarm, tool_cmd_record, tool_cmd_pack;

/* ---- tool_cli.c ---- */

/* Every command accepts these; list them first in its option table. */
#define TOOL_COMMON_OPTIONS                                                                        \
    {"help", no_argument, NULL, 'h'},                                                              \
    {                                                                                              \
        "dir", required_argument, NULL, TOOL_OPTION_DIR                                            \
    }

enum {
    TOOL_OPTION_DIR = 0x100,
    TOOL_OPTIONS_DONE = -1, /* parse the operands from optind */
    TOOL_OPTIONS_HELP = -2, /* help was printed: exit 0 */
    TOOL_OPTIONS_BAD = -3,  /* a message was printed: exit 2 */
};

/* The command's next option, as getopt_long (stopping at the first operand),
 * with --help and --dir handled here: returns an option's val, or one of
 * TOOL_OPTIONS_*. argv[0] is what getopt's messages name. */
int tool_next_option(tool_context *tool, int argc, char **argv, const struct option *options);
/* The exit status for a TOOL_OPTIONS_HELP or TOOL_OPTIONS_BAD result. */
int tool_options_exit(int result);
/* For commands with only the common options and exactly operand_count
 * operands (from optind): TOOL_OPTIONS_DONE, or the exit status to return. */
int tool_parse_plain(tool_context *tool, int argc, char **argv, int operand_count);
/* Ends a command's own option loop: last is tool_next_option's final result.
 * Checks it and that exactly operand_count operands follow (from optind):
 * TOOL_OPTIONS_DONE, or the exit status to return. */
int tool_end_options(tool_context *tool, int last, int argc, char **argv, int operand_count);

/* --dir DIR: remembered and exported, so the configuration (and a program
 * run by exec) sees it as NEO_CACHE_DIR. False for an empty DIR. */
bool tool_set_dir(tool_context *tool, const char *dir);

/* "zecache CMD: message", "Try ..."; returns TOOL_EXIT_USAGE. */
int tool_usage_error(const tool_context *tool, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* "zecache CMD: message"; returns TOOL_EXIT_FAILURE. */
int tool_fail(const tool_context *tool, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The help of tool->command, or of the whole tool when there is none. */
void tool_print_help(const tool_context *tool);

/* ---- cmd_exec.c ---- */

/* Enables the layer for this process's children (LD_LIBRARY_PATH and
 * ZE_ENABLE_VALIDATION_LAYER), as exec does: TOOL_EXIT_OK, or the exit
 * status after printing why not. */
int tool_enable_layer(const tool_context *tool);
/* The path of name in the directory of the running tool. */
bool tool_sibling_path(const char *name, char path[PATH_MAX]);

/* ---- zecache_main.c ---- */

void tool_print_main_help(void);

/* zecache --version (tool_version.c). */
int tool_print_version(void);

/* ---- tool_cache.c ---- */

/* Opens config's directory for inspection and maintenance, also when
 * NEO_CACHE_PERSISTENT=0 turns the layer's use of it off. On failure prints
 * why (the core's own message) and returns its status. */
zc_status tool_open_tier(const tool_context *tool, const zc_config *config, zc_disk_tier **tier);
/* The configuration from the environment (zc_config_from_env) and its
 * directory opened as tool_open_tier does. */
zc_status tool_open_configured_tier(const tool_context *tool, zc_config *config,
                                    zc_disk_tier **tier);

/* The shape of every command on the cache directory, after its arguments
 * are parsed: opens the configured directory (TOOL_EXIT_FAILURE, with the
 * reason printed, when it cannot), runs body on it, closes it, and returns
 * body's exit status. */
typedef int (*tool_tier_body)(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                              void *args);
int tool_with_tier(tool_context *tool, tool_tier_body body, void *args);

/* ---- tool_entries.c ---- */

typedef struct tool_entry {
    char *path; /* relative to the cache directory */
    uint64_t file_size;
    int64_t last_use_sec, last_use_nsec;
    bool is_zecache;   /* named <64 hex>.l0_cache or .cl_cache; else the driver's own */
    zc_key key;        /* when is_zecache */
    zc_entry_kind api; /* by the name's suffix, the driver's own entries' too */
    bool header_ok;
    zc_entry_header header; /* when header_ok */
    char header_problem[128];
} tool_entry;

typedef struct tool_entry_list {
    tool_entry *items;
    size_t count;
} tool_entry_list;

/* Every .l0_cache and .cl_cache file, sorted by path, with the header of each zecache
 * entry read and checked (not the payload: that is verify's job). */
zc_status tool_list_entries(zc_disk_tier *tier, tool_entry_list *list);
void tool_free_entries(tool_entry_list *list);
/* What export and pack carry of a listed entry: its bytes, verified as a
 * load verifies them (malloc'd): true. False for the driver's own entries
 * (counted in *drivers) and for one that does not verify (counted in *bad,
 * reported on standard error as "skipped PATH: reason"). */
bool tool_read_verified(zc_disk_tier *tier, const tool_entry *entry, uint8_t **bytes, size_t *size,
                        uint64_t *bad, uint64_t *drivers);
/* The entry's file name (the key's hex for ours). */
const char *tool_entry_name(const tool_entry *entry);
/* "L0" or "CL", for columns. */
const char *tool_entry_api_short(const tool_entry *entry);

/* ---- cmd_ls.c, cmd_verify.c: a pack's listing and check (pack --list, --verify) ---- */

int tool_ls_pack(tool_context *tool, const char *file);
int tool_verify_pack(tool_context *tool, const char *file);

/* ---- tool_pack.c ---- */

/* The signer of the secret NEO_CACHE_REMOTE_SECRET_FILE names (secret holds
 * its key) in *sign, NULL without one: TOOL_EXIT_OK, or the exit status
 * after printing why it cannot be used. For bundles and packs. */
int tool_secret_signer(const tool_context *tool, zc_remote_secret *secret, zc_bundle_signer *signer,
                       const zc_bundle_signer **sign);
/* Opens file as a process serving it would, with that secret: TOOL_EXIT_OK,
 * or the exit status after printing why not. */
int tool_open_pack(const tool_context *tool, const char *file, zc_pack **pack);
/* Opens file so and lists its entries (tool_list_pack_entries): the caller
 * closes *pack and frees *list after TOOL_EXIT_OK. */
int tool_read_pack(const tool_context *tool, const char *file, zc_pack **pack,
                   tool_entry_list *list);
/* The pack's entries in key order, as tool_list_entries lists a
 * directory's: named <64 hex>.l0_cache or .cl_cache, last used when file was
 * last changed, each header read and checked. */
zc_status tool_list_pack_entries(const char *file, const zc_pack *pack, tool_entry_list *list);
/* The entry checked as a process serving it checks it: ZC_OK, with the
 * artifact unless artifact is NULL, or ZC_MISS with the reason. */
zc_status tool_check_pack_entry(const zc_pack *pack, const tool_entry *entry,
                                zc_artifact **artifact, char *reason, size_t reason_size);

#endif
