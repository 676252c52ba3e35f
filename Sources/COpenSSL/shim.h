/*
 * COpenSSL: the system's libcrypto (OpenSSL 3, already linked by libwebsockets for
 * TLS), for what the broker verifies itself: JWT signatures (HS256, ES256, RS256).
 * Small functions with a `hub_` prefix hide OpenSSL's macros and ownership rules from
 * Swift.
 */
#ifndef HUB_COPENSSL_SHIM_H
#define HUB_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What a public key is good for. */
enum hub_key_kind { HUB_KEY_OTHER = 0, HUB_KEY_EC_P256 = 1, HUB_KEY_RSA = 2 };

/*
 * The public key in `pem`: a SubjectPublicKeyInfo ("PUBLIC KEY"), a PKCS#1 RSA key
 * ("RSA PUBLIC KEY") or a certificate ("CERTIFICATE"), whose key is taken. NULL when
 * none parses. Free it with hub_key_free.
 */
static inline EVP_PKEY *hub_public_key_from_pem(const char *pem, size_t length) {
    EVP_PKEY *key = NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (!bio) return NULL;
    /* SubjectPublicKeyInfo or PKCS#1, whichever the PEM holds. */
    OSSL_DECODER_CTX *decoder = OSSL_DECODER_CTX_new_for_pkey(
        &key, "PEM", NULL, NULL, EVP_PKEY_PUBLIC_KEY, NULL, NULL);
    if (decoder) {
        if (OSSL_DECODER_from_bio(decoder, bio) != 1) key = NULL;
        OSSL_DECODER_CTX_free(decoder);
    }
    if (!key) {
        (void)BIO_reset(bio);
        X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (certificate) {
            key = X509_get_pubkey(certificate);
            X509_free(certificate);
        }
    }
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

/* The private key in `pem` (PKCS#8 or traditional), or NULL. For tests that sign. */
static inline EVP_PKEY *hub_private_key_from_pem(const char *pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (!bio) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

static inline void hub_key_free(EVP_PKEY *key) {
    EVP_PKEY_free(key);
}

/* Whether `key` is an EC key on P-256, an RSA key, or something else. */
static inline int hub_key_kind(const EVP_PKEY *key) {
    switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_EC: {
        char group[64];
        size_t written = 0;
        if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &written) == 1
            && (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)) {
            return HUB_KEY_EC_P256;
        }
        return HUB_KEY_OTHER;
    }
    case EVP_PKEY_RSA:
        return HUB_KEY_RSA;
    default:
        return HUB_KEY_OTHER;
    }
}

/* The RSA key's size in bits (0 for another key). */
static inline int hub_key_bits(const EVP_PKEY *key) {
    return EVP_PKEY_get_bits(key);
}

/* Whether `signature` (DER for ECDSA, PKCS#1 v1.5 for RSA) signs `message` with SHA-256. */
static inline int hub_verify_sha256_der(EVP_PKEY *key, const uint8_t *signature, size_t signature_length,
                                        const uint8_t *message, size_t message_length) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (!context) return 0;
    int ok = EVP_DigestVerifyInit(context, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestVerify(context, signature, signature_length, message, message_length) == 1;
    EVP_MD_CTX_free(context);
    ERR_clear_error();
    return ok;
}

/* Whether the 64-byte JWS ES256 `signature` (r then s, each 32 bytes big-endian) signs
   `message` with `key` (an EC P-256 public key). */
static inline int hub_verify_es256(EVP_PKEY *key, const uint8_t *signature, size_t signature_length,
                                   const uint8_t *message, size_t message_length) {
    if (signature_length != 64) return 0;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(signature, 32, NULL);
    BIGNUM *s = BN_bin2bn(signature + 32, 32, NULL);
    if (!sig || !r || !s || ECDSA_SIG_set0(sig, r, s) != 1) {
        ECDSA_SIG_free(sig);
        BN_free(r);
        BN_free(s);
        return 0;
    }
    unsigned char *der = NULL;
    int der_length = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);
    if (der_length <= 0) return 0;
    int ok = hub_verify_sha256_der(key, der, (size_t)der_length, message, message_length);
    OPENSSL_free(der);
    return ok;
}

/* HMAC-SHA-256 of `message` with `secret` into `out` (32 bytes); 1 on success. */
static inline int hub_hmac_sha256(const uint8_t *secret, size_t secret_length, const uint8_t *message,
                                  size_t message_length, uint8_t *out) {
    unsigned int written = 0;
    return HMAC(EVP_sha256(), secret, (int)secret_length, message, message_length, out, &written) != NULL
        && written == 32;
}

/* Whether two buffers of `length` bytes are equal, in time that does not depend on where they differ. */
static inline int hub_equal_in_constant_time(const void *a, const void *b, size_t length) {
    return CRYPTO_memcmp(a, b, length) == 0;
}

/*
 * For tests: signs `message` with SHA-256 and `key` (EC or RSA private key) into `out`
 * (capacity `*length`, set to the bytes written); an EC signature is converted to the
 * JWS form (r then s, 32 bytes each). 1 on success.
 */
static inline int hub_sign_sha256(EVP_PKEY *key, const uint8_t *message, size_t message_length, uint8_t *out,
                                  size_t *length) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (!context) return 0;
    size_t der_length = 0;
    int ok = EVP_DigestSignInit(context, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestSign(context, NULL, &der_length, message, message_length) == 1;
    unsigned char *der = ok ? OPENSSL_malloc(der_length) : NULL;
    ok = ok && der && EVP_DigestSign(context, der, &der_length, message, message_length) == 1;
    EVP_MD_CTX_free(context);
    if (ok && EVP_PKEY_get_base_id(key) == EVP_PKEY_EC) {
        const unsigned char *cursor = der;
        ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &cursor, (long)der_length);
        const BIGNUM *r = NULL, *s = NULL;
        if (sig) ECDSA_SIG_get0(sig, &r, &s);
        ok = sig && *length >= 64 && BN_bn2binpad(r, out, 32) == 32 && BN_bn2binpad(s, out + 32, 32) == 32;
        if (ok) *length = 64;
        ECDSA_SIG_free(sig);
    } else if (ok) {
        ok = *length >= der_length;
        if (ok) {
            memcpy(out, der, der_length);
            *length = der_length;
        }
    }
    OPENSSL_free(der);
    ERR_clear_error();
    return ok;
}

#endif
