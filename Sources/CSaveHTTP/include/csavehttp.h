#ifndef CSAVEHTTP_H
#define CSAVEHTTP_H

#include <stddef.h>

/// HTTP for the S3 client, through libcurl loaded when the first request is made.
///
/// libcurl is opened with dlopen rather than linked: linked, it and its two dozen libraries
/// (TLS, Kerberos, LDAP, IDN …) were loaded and relocated by every savetool command, and a
/// `convert` of a small file spent most of its time there. Only the commands that talk to an
/// object store pay for it now.

/// Receives a piece of the answer's headers or body; returns `length` to go on.
typedef size_t (*savetool_http_sink)(void *context, const char *data, size_t length);

/// One connection cache (a curl easy handle), or NULL with `error` filled in when libcurl
/// cannot be loaded. Not for two threads at once.
void *savetool_http_open(char *error, size_t error_capacity);
void savetool_http_close(void *handle);

/// Sends one request and streams the answer into the sinks. `headers` are whole lines
/// ("name: value"). Returns 0 and sets `status`, or non-zero with `error` filled in.
int savetool_http_perform(void *handle, const char *method, const char *url,
                          const char *const *headers, size_t header_count,
                          const void *body, size_t body_length, int sends_body,
                          long connect_timeout, long idle_timeout, long total_timeout, const char *ca_file,
                          savetool_http_sink on_header, savetool_http_sink on_body, void *context,
                          long *status, char *error, size_t error_capacity);

#endif
