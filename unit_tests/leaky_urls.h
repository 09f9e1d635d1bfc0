/* NEO_CACHE_REMOTE items that hold a password, token or key where it does
 * not belong, for the tests that no message shows it. Header-only. */
#ifndef ZC_LEAKY_URLS_H
#define ZC_LEAKY_URLS_H

/* Storages whose URLs hold a password, token or key where it does not
 * belong, each with the secret SECRET_A and SECRET_B make. */
#define SECRET_A "TopS3cr"
#define SECRET_B "tPassw0rd"
static const char *const leaky[] __attribute__((unused)) = {
    "redis://zecache:" SECRET_A "@" SECRET_B "@127.0.0.1:70000",
    "redis://zecache:" SECRET_A "@" SECRET_B "@127.0.0.1:1/notadb",
    "redis://zecache:" SECRET_A "@" SECRET_B "@127.0.0.1:1|read_only",
    "redis://zecache:" SECRET_A "@" SECRET_B "@127.0.0.1:1|connect-timeout=100",
    "rediss://zecache:" SECRET_A "@" SECRET_B "@127.0.0.1:1|ca-file=/nonexistent/ca.pem",
    "redis://:" SECRET_A "|" SECRET_B "@127.0.0.1:1",
    "redis://:" SECRET_A "|" SECRET_B "|@127.0.0.1:1",
    "redis://:" SECRET_A "/" SECRET_B "@127.0.0.1:1/x",
    "redis://:" SECRET_A "%40" SECRET_B "@127.0.0.1:1|connect-timeout=100",
    "redis://" SECRET_A "%40" SECRET_B "%40127.0.0.1:1",
    "redis://u:" SECRET_A "@" SECRET_B "@127.0.0.1:1?db=1",
    "redis://" SECRET_A "@" SECRET_B ":x@127.0.0.1:1",
    "redis://127.0.0.1:1|password=" SECRET_A SECRET_B,
    "redis+unix:///tmp/zc-none.sock?password=" SECRET_A SECRET_B,
    "http://pw-" SECRET_A "%40" SECRET_B "%40127.0.0.1:1/x",
    "http://pw-" SECRET_A "@" SECRET_B "@127.0.0.1:1/x",
    "https://user:" SECRET_A "@" SECRET_B "@localhost/x|ca-file=/nonexistent",
    "http://127.0.0.1:1/x?token=" SECRET_A SECRET_B,
    "http://127.0.0.1:1/x|token=" SECRET_A SECRET_B,
    "http://" SECRET_A ":" SECRET_B "@127.0.0.1:1|bearer-token-file=/nonexistent",
    "file:///" SECRET_A ":" SECRET_B "@tmp|bogus",
};

#endif
