/* The live objects of one kind, for fork handlers (live_set.h). */
#include "zecache/live_set.h"

void zc_live_set_add(zc_live_set *set, zc_live_link *link)
{
    pthread_once(&set->once, set->register_handlers);
    pthread_mutex_lock(&set->lock);
    link->next = set->head;
    set->head = link;
    pthread_mutex_unlock(&set->lock);
}

void zc_live_set_remove(zc_live_set *set, zc_live_link *link)
{
    pthread_mutex_lock(&set->lock);
    zc_live_link **at = &set->head;
    while (*at != NULL && *at != link)
        at = &(*at)->next;
    if (*at != NULL)
        *at = link->next;
    pthread_mutex_unlock(&set->lock);
}
