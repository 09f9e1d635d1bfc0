/* A buffer faulted in on another thread (source/common/faulted_buffer.h):
 * the caller gets every byte it asked for, zeroed and writable, whether it
 * waits first or frees at once, from several threads at a time. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "faulted_buffer.h"

enum { BUFFER_BYTES = 3 * 1024 * 1024 + 123 };

static void fill_and_check(zc_faulted_buffer *pending, size_t expected)
{
    size_t size = 0;
    uint8_t *bytes = zc_faulted_buffer_wait(pending, &size);
    cr_assert_not_null(bytes);
    cr_assert_eq(size, expected);
    for (size_t at = 0; at < size; at += 4093)
        cr_assert_eq(bytes[at], 0);
    cr_assert_eq(bytes[size - 1], 0);
    memset(bytes, 0xA5, size);
    size_t again = 0;
    cr_assert_eq(zc_faulted_buffer_wait(pending, &again), bytes, "a second wait: the same buffer");
    cr_assert_eq(again, size);
}

Test(faulted_buffer, the_whole_buffer_is_zeroed_and_writable)
{
    zc_faulted_buffer *pending = zc_faulted_buffer_start(BUFFER_BYTES);
    cr_assert_not_null(pending);
    fill_and_check(pending, BUFFER_BYTES);
    zc_faulted_buffer_free(pending);
}

Test(faulted_buffer, freed_without_a_wait_and_nothing_asked)
{
    zc_faulted_buffer_free(zc_faulted_buffer_start(BUFFER_BYTES));
    zc_faulted_buffer_free(NULL);
    cr_assert_null(zc_faulted_buffer_start(0));
    cr_assert_null(zc_faulted_buffer_start(SIZE_MAX), "no mapping that large");
}

static void *use_one(void *unused)
{
    (void)unused;
    for (int i = 0; i < 8; i++) {
        zc_faulted_buffer *pending = zc_faulted_buffer_start(65536 + (size_t)i);
        cr_assert_not_null(pending);
        fill_and_check(pending, 65536 + (size_t)i);
        zc_faulted_buffer_free(pending);
    }
    return NULL;
}

Test(faulted_buffer, threads_each_with_their_own)
{
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&threads[i], NULL, use_one, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
}
