/* The live objects of one kind (open tiers, connections), for the fork
 * handlers that must visit each of them. An object embeds a zc_live_link;
 * its part's prepare handler takes set->lock and walks set->head, and the
 * parent and child handlers release it. The first zc_live_set_add registers
 * the part's handlers, once. */
#ifndef ZECACHE_LIVE_SET_H
#define ZECACHE_LIVE_SET_H

#include <pthread.h>
#include <stddef.h>

typedef struct zc_live_link {
    struct zc_live_link *next;
} zc_live_link;

typedef struct zc_live_set {
    pthread_mutex_t lock;
    zc_live_link *head;
    pthread_once_t once;
    void (*register_handlers)(void); /* run once, by the first add */
} zc_live_set;

#define ZC_LIVE_SET_INIT(register_handlers)                                                        \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, NULL, PTHREAD_ONCE_INIT, register_handlers                      \
    }

/* The object holding link as its member. */
#define ZC_LIVE_OWNER(link, type, member) ((type *)(void *)((char *)(link)-offsetof(type, member)))

void zc_live_set_add(zc_live_set *set, zc_live_link *link);
void zc_live_set_remove(zc_live_set *set, zc_live_link *link);

#endif
