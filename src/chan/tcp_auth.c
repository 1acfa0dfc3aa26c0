#include "config.h"

/* The TCP control channel's proofs: see tcp_auth.h. */

#include "chan/tcp_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define DOMAIN "collprof control channel v1" /* no other use of the key makes these bytes */

int cp_auth_random(void *buf, size_t len, char *why, size_t wlen)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t k = getrandom(p, len, 0);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            snprintf(why, wlen, "getrandom: %s", k < 0 ? strerror(errno) : "no bytes");
            return -1;
        }
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

void cp_auth_mac(const unsigned char *key, const char *purpose, int role, const unsigned char *na,
                 const unsigned char *nc, uint32_t index, uint32_t n, unsigned char *out)
{
    struct hmac_sha256_ctx ctx;
    unsigned char r = (unsigned char)role;
    uint32_t plen = htonl((uint32_t)strlen(purpose)), be[2] = {htonl(index), htonl(n)};
    hmac_sha256_set_key(&ctx, CP_AUTH_KEY_LEN, key);
    hmac_sha256_update(&ctx, sizeof(DOMAIN), (const uint8_t *)DOMAIN); /* its NUL too */
    hmac_sha256_update(&ctx, 1, &r);
    hmac_sha256_update(&ctx, sizeof(plen), (const uint8_t *)&plen); /* length, then the text */
    hmac_sha256_update(&ctx, strlen(purpose), (const uint8_t *)purpose);
    hmac_sha256_update(&ctx, CP_AUTH_NONCE_LEN, na);
    hmac_sha256_update(&ctx, CP_AUTH_NONCE_LEN, nc);
    hmac_sha256_update(&ctx, sizeof(be), (const uint8_t *)be);
    hmac_sha256_digest(&ctx, CP_AUTH_MAC_LEN, out);
    cp_auth_wipe(&ctx, sizeof(ctx)); /* it holds the key's pads */
}

int cp_auth_check(const unsigned char *key, const char *purpose, int role, const unsigned char *na,
                  const unsigned char *nc, uint32_t index, uint32_t n, const unsigned char *proof)
{
    unsigned char want[CP_AUTH_MAC_LEN];
    cp_auth_mac(key, purpose, role, na, nc, index, n, want);
    return memeql_sec(want, proof, sizeof(want));
}

void cp_auth_wipe(void *buf, size_t len)
{
    explicit_bzero(buf, len);
}
