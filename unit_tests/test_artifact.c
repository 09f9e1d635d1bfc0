#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "zecache/artifact.h"

static const uint8_t binary[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3, 0xff};
static const char log_text[] = "warning: something";

Test(artifact, copies_binary_log_and_meta)
{
    zc_artifact_meta meta = {.device_name = "Test GPU",
                             .driver_version = "1.2.3",
                             .compile_ns = 12345,
                             .created_unix = 1700000000};
    uint8_t source[sizeof(binary)];
    memcpy(source, binary, sizeof(binary));
    zc_artifact *artifact =
        zc_artifact_create(source, sizeof(source), log_text, strlen(log_text), &meta);
    cr_assert_not_null(artifact);
    memset(source, 0, sizeof(source)); /* the artifact must own a copy */

    size_t size = 0;
    const uint8_t *bytes = zc_artifact_binary(artifact, &size);
    cr_assert_eq(size, sizeof(binary));
    cr_assert_arr_eq(bytes, binary, sizeof(binary));

    const char *log = zc_artifact_build_log(artifact, &size);
    cr_assert_eq(size, strlen(log_text));
    cr_assert_arr_eq(log, log_text, size);
    cr_assert_eq(log[size], '\0');

    const zc_artifact_meta *copied = zc_artifact_meta_of(artifact);
    cr_assert_neq(copied, &meta);
    cr_assert_arr_eq(copied, &meta, sizeof(meta));
    zc_artifact_unref(artifact);
}

Test(artifact, log_without_nul_in_its_bytes_is_followed_by_one)
{
    const char unterminated[3] = {'a', 'b', 'c'};
    zc_artifact *artifact = zc_artifact_create(binary, 1, unterminated, 3, NULL);
    cr_assert_not_null(artifact);
    size_t size = 0;
    const char *log = zc_artifact_build_log(artifact, &size);
    cr_assert_eq(size, 3);
    cr_assert_str_eq(log, "abc");
    zc_artifact_unref(artifact);
}

Test(artifact, null_log_and_meta_give_empty_log_and_zero_meta)
{
    zc_artifact *artifact = zc_artifact_create(binary, sizeof(binary), NULL, 0, NULL);
    cr_assert_not_null(artifact);
    size_t size = 99;
    cr_assert_str_eq(zc_artifact_build_log(artifact, &size), "");
    cr_assert_eq(size, 0);
    static const zc_artifact_meta zero;
    cr_assert_arr_eq(zc_artifact_meta_of(artifact), &zero, sizeof(zero));
    zc_artifact_unref(artifact);
}

Test(artifact, empty_binary_is_allowed)
{
    zc_artifact *artifact = zc_artifact_create(NULL, 0, NULL, 0, NULL);
    cr_assert_not_null(artifact);
    size_t size = 99;
    zc_artifact_binary(artifact, &size);
    cr_assert_eq(size, 0);
    zc_artifact_unref(artifact);
}

Test(artifact, rejects_missing_bytes_and_overflowing_sizes)
{
    cr_assert_null(zc_artifact_create(NULL, 4, NULL, 0, NULL));
    cr_assert_null(zc_artifact_create(binary, sizeof(binary), NULL, 4, NULL));
    cr_assert_null(zc_artifact_create(binary, SIZE_MAX, NULL, 0, NULL));
    cr_assert_null(zc_artifact_create(binary, SIZE_MAX / 2, log_text, SIZE_MAX / 2, NULL));
}

Test(artifact, footprint_grows_by_exactly_the_payload)
{
    zc_artifact *empty = zc_artifact_create(NULL, 0, NULL, 0, NULL);
    zc_artifact *full =
        zc_artifact_create(binary, sizeof(binary), log_text, strlen(log_text), NULL);
    cr_assert_not_null(empty);
    cr_assert_not_null(full);
    cr_assert_gt(zc_artifact_footprint(empty), 0);
    cr_assert_eq(zc_artifact_footprint(full) - zc_artifact_footprint(empty),
                 sizeof(binary) + strlen(log_text));
    zc_artifact_unref(empty);
    zc_artifact_unref(full);
}

Test(artifact, references_keep_it_alive_until_the_last_unref)
{
    zc_artifact *artifact = zc_artifact_create(binary, sizeof(binary), NULL, 0, NULL);
    cr_assert_not_null(artifact);
    cr_assert_eq(zc_artifact_ref(artifact), artifact);
    cr_assert_eq(zc_artifact_ref(artifact), artifact);
    zc_artifact_unref(artifact);
    zc_artifact_unref(artifact);
    /* Still one reference: reading must be valid (ASan would flag a free). */
    size_t size = 0;
    cr_assert_arr_eq(zc_artifact_binary(artifact, &size), binary, sizeof(binary));
    zc_artifact_unref(artifact);
    zc_artifact_unref(NULL);
    cr_assert_null(zc_artifact_ref(NULL));
}

Test(artifact, unfilled_payload_is_binary_then_log_contiguous)
{
    uint8_t *payload = NULL;
    size_t log_size = strlen(log_text);
    zc_artifact *artifact = zc_artifact_create_unfilled(sizeof(binary), log_size, NULL, &payload);
    cr_assert_not_null(artifact);
    memcpy(payload, binary, sizeof(binary));
    memcpy(payload + sizeof(binary), log_text, log_size);
    size_t size = 0;
    cr_assert_arr_eq(zc_artifact_binary(artifact, &size), binary, sizeof(binary));
    cr_assert_eq(size, sizeof(binary));
    cr_assert_str_eq(zc_artifact_build_log(artifact, &size), log_text);
    cr_assert_eq(size, log_size);
    cr_assert_eq(zc_artifact_payload(artifact, &size), payload);
    cr_assert_eq(size, sizeof(binary) + log_size);
    zc_artifact_unref(artifact);
}
