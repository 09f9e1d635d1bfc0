/* See redis_buffer_budget.h. */
#include "redis_buffer_budget.h"

void zc_redis_buffer_budget_init(zc_redis_buffer_budget *budget, size_t limit)
{
    atomic_init(&budget->kept, 0);
    budget->limit = limit;
}

bool zc_redis_buffer_budget_take(zc_redis_buffer_budget *budget, size_t size)
{
    size_t kept = atomic_load_explicit(&budget->kept, memory_order_relaxed);
    do {
        if (size > budget->limit || kept > budget->limit - size)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&budget->kept, &kept, kept + size,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

void zc_redis_buffer_budget_give(zc_redis_buffer_budget *budget, size_t size)
{
    atomic_fetch_sub_explicit(&budget->kept, size, memory_order_relaxed);
}
