/* The tool's one reader of packs: a pack opened as a process serving it
 * opens it (with the secret that signs and checks bundles and packs), and
 * its entries as tool_entry, so that ls, show, verify and pack
 * --list/--verify read a pack as they read a directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"
#include "tool_inputs.h"
#include "zecache/remote_tag.h"

enum { REASON_SIZE = 512 };

int tool_secret_signer(const tool_context *tool, zc_remote_secret *secret, zc_bundle_signer *signer,
                       const zc_bundle_signer **sign)
{
    zc_config config;
    zc_config_from_env(&config);
    bool failed;
    char reason[REASON_SIZE];
    *sign = tool_bundle_signer(&config, secret, signer, &failed, reason, sizeof reason);
    if (failed)
        return tool_fail(tool, "NEO_CACHE_REMOTE_SECRET_FILE: %s", reason);
    return TOOL_EXIT_OK;
}

int tool_open_pack(const tool_context *tool, const char *file, zc_pack **pack)
{
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    const zc_bundle_signer *verifier;
    int exit_status = tool_secret_signer(tool, &secret, &signer, &verifier);
    char reason[REASON_SIZE];
    if (exit_status == TOOL_EXIT_OK &&
        zc_pack_open(file, verifier, pack, reason, sizeof reason) != ZC_OK)
        exit_status = tool_fail(tool, "%s: %s", file, reason);
    return exit_status;
}

int tool_read_pack(const tool_context *tool, const char *file, zc_pack **pack,
                   tool_entry_list *list)
{
    int exit_status = tool_open_pack(tool, file, pack);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    zc_status status = tool_list_pack_entries(file, *pack, list);
    if (status == ZC_OK)
        return TOOL_EXIT_OK;
    zc_pack_close(*pack);
    *pack = NULL;
    return tool_fail(tool, "cannot list %s (%s)", file, zc_status_name(status));
}

/* Named as the directory would name it, sized and with its header read;
 * last use is when the pack was made (its entries are never used in it). */
static bool describe(const zc_pack *pack, uint64_t index, int64_t made, tool_entry *entry)
{
    memset(entry, 0, sizeof *entry);
    zc_pack_key_at(pack, index, &entry->key);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&entry->key, hex);
    entry->api = (zc_entry_kind)entry->key.kind;
    size_t length = strlen(hex) + sizeof ZC_ENTRY_SUFFIX;
    entry->path = malloc(length);
    if (entry->path == NULL)
        return false;
    snprintf(entry->path, length, "%s%s", hex,
             entry->api == ZC_ENTRY_OPENCL ? ZC_ENTRY_SUFFIX_OPENCL : ZC_ENTRY_SUFFIX);
    entry->is_zecache = true;
    entry->last_use_sec = made;
    uint8_t *bytes = NULL;
    size_t size = 0;
    char *problem = entry->header_problem;
    size_t problem_size = sizeof entry->header_problem;
    zc_status status = zc_pack_find(pack, &entry->key, &bytes, &size, problem, problem_size);
    if (status == ZC_OK) {
        entry->file_size = size;
        status = zc_entry_read_header(bytes, size, &entry->header, problem, problem_size);
    }
    entry->header_ok = status == ZC_OK;
    free(bytes);
    return status != ZC_ERR_NOMEM;
}

zc_status tool_list_pack_entries(const char *file, const zc_pack *pack, tool_entry_list *list)
{
    memset(list, 0, sizeof *list);
    struct stat st;
    int64_t made = stat(file, &st) == 0 ? (int64_t)st.st_mtime : 0;
    uint64_t count = zc_pack_entry_count(pack);
    list->items = count > 0 ? calloc((size_t)count, sizeof *list->items) : NULL;
    if (count > 0 && list->items == NULL)
        return ZC_ERR_NOMEM;
    for (uint64_t i = 0; i < count; i++) {
        list->count++;
        if (!describe(pack, i, made, &list->items[i])) {
            tool_free_entries(list);
            return ZC_ERR_NOMEM;
        }
    }
    return ZC_OK;
}

zc_status tool_check_pack_entry(const zc_pack *pack, const tool_entry *entry,
                                zc_artifact **artifact, char *reason, size_t reason_size)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    zc_artifact *decoded = NULL;
    zc_status status = zc_pack_find(pack, &entry->key, &bytes, &size, reason, reason_size);
    if (status == ZC_MISS && reason[0] == '\0')
        status = zc_explain(ZC_MISS, reason, reason_size, "not in the pack");
    if (status == ZC_OK)
        status = zc_entry_decode(bytes, size, &entry->key, 0, &decoded, reason, reason_size);
    free(bytes);
    if (artifact != NULL && status == ZC_OK)
        *artifact = decoded;
    else
        zc_artifact_unref(decoded);
    return status;
}
