/* See cmd_remote_cluster.h. Each master holds its own slots (and its own
 * ACL users): one that refuses or does not answer fails the modules whose
 * entries it holds, which one probe of the storage may never meet. */
#include "cmd_remote_cluster.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_MASTERS = 256 };

const char *check_cluster_masters(zc_storage *storage, remote_probe_fn probe,
                                  remote_report_fn report)
{
    zc_storage_cluster_master *masters = calloc(MAX_MASTERS, sizeof *masters);
    if (masters == NULL)
        return "out of memory";
    size_t count = 0;
    zc_status status = zc_storage_redis_cluster_masters(storage, masters, MAX_MASTERS, &count);
    const char *problem = status == ZC_ERR_IO ? "cannot read the cluster's slots"
                          : status != ZC_OK   ? "some slots are served by no master"
                                              : NULL;
    for (size_t i = 0; i < count; i++) {
        double elapsed_ms = 0;
        const char *failed = probe(storage, masters[i].probe, &elapsed_ms);
        char label[sizeof masters[i].name + 16];
        snprintf(label, sizeof label, "  master %s", masters[i].name);
        report(label, masters[i].name, failed, storage->read_only, elapsed_ms);
        if (failed != NULL)
            problem = "a master failed";
    }
    free(masters);
    return problem;
}
