#include "csavehttp.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

// libcurl's ABI, stable since 7.x (curl.h is not needed to build savetool): option numbers are
// a type base (long 0, object pointer 10000, function pointer 20000, off_t 30000) plus an index.
enum {
    OPT_WRITEDATA = 10001, OPT_URL = 10002, OPT_ERRORBUFFER = 10010, OPT_WRITEFUNCTION = 20011,
    OPT_TIMEOUT = 13, OPT_POSTFIELDS = 10015, OPT_LOW_SPEED_LIMIT = 19, OPT_LOW_SPEED_TIME = 20,
    OPT_HTTPHEADER = 10023, OPT_HEADERDATA = 10029, OPT_CUSTOMREQUEST = 10036, OPT_NOBODY = 44,
    OPT_CONNECTTIMEOUT = 78, OPT_HEADERFUNCTION = 20079, OPT_HTTP_VERSION = 84, OPT_NOSIGNAL = 99,
    OPT_POSTFIELDSIZE_LARGE = 30120, OPT_CAINFO = 10065, OPT_CAPATH = 10097,
    HTTP_VERSION_1_1 = 2,
    INFO_RESPONSE_CODE = 0x200002,
    GLOBAL_DEFAULT = 3,
    ERROR_SIZE = 256,
};

struct curl_list;
static struct {
    int (*global_init)(long);
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *);
    void (*easy_reset)(void *);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_perform)(void *);
    int (*easy_getinfo)(void *, int, ...);
    const char *(*easy_strerror)(int);
    struct curl_list *(*slist_append)(struct curl_list *, const char *);
    void (*slist_free_all)(struct curl_list *);
    char problem[256];
} curl;

static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void) {
    const char *names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", "libcurl.4.dylib", "libcurl.dylib"};
    void *library = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !library; i++) library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(curl.problem, sizeof curl.problem, "libcurl could not be loaded (%s); install libcurl (Debian: libcurl4)", dlerror());
        return;
    }
#define FIND(field, symbol) \
    if (!(*(void **)&curl.field = dlsym(library, symbol))) { \
        snprintf(curl.problem, sizeof curl.problem, "libcurl has no %s; install a newer libcurl", symbol); \
        return; \
    }
    FIND(global_init, "curl_global_init")
    FIND(easy_init, "curl_easy_init")
    FIND(easy_cleanup, "curl_easy_cleanup")
    FIND(easy_reset, "curl_easy_reset")
    FIND(easy_setopt, "curl_easy_setopt")
    FIND(easy_perform, "curl_easy_perform")
    FIND(easy_getinfo, "curl_easy_getinfo")
    FIND(easy_strerror, "curl_easy_strerror")
    FIND(slist_append, "curl_slist_append")
    FIND(slist_free_all, "curl_slist_free_all")
#undef FIND
    if (curl.global_init(GLOBAL_DEFAULT) != 0) snprintf(curl.problem, sizeof curl.problem, "libcurl could not start");
}

static void copy_error(char *error, size_t capacity, const char *text) {
    if (capacity == 0) return;
    snprintf(error, capacity, "%s", text);
}

void *savetool_http_open(char *error, size_t error_capacity) {
    pthread_once(&loaded, load);
    if (curl.problem[0]) {
        copy_error(error, error_capacity, curl.problem);
        return NULL;
    }
    void *handle = curl.easy_init();
    if (!handle) copy_error(error, error_capacity, "libcurl could not make a connection handle");
    return handle;
}

void savetool_http_close(void *handle) {
    if (handle) curl.easy_cleanup(handle);
}

struct sinks {
    savetool_http_sink on_header, on_body;
    void *context;
};

static size_t deliver_header(char *data, size_t size, size_t count, void *context) {
    struct sinks *sinks = context;
    return sinks->on_header(sinks->context, data, size * count);
}

static size_t deliver_body(char *data, size_t size, size_t count, void *context) {
    struct sinks *sinks = context;
    return sinks->on_body(sinks->context, data, size * count);
}

int savetool_http_perform(void *handle, const char *method, const char *url,
                          const char *const *headers, size_t header_count,
                          const void *body, size_t body_length, int sends_body,
                          long connect_timeout, long idle_timeout, long total_timeout, const char *ca_file,
                          savetool_http_sink on_header, savetool_http_sink on_body, void *context,
                          long *status, char *error, size_t error_capacity) {
    // Reset keeps the handle's open connections for the next request to the same store.
    curl.easy_reset(handle);
    struct curl_list *list = NULL;
    for (size_t i = 0; i < header_count; i++) {
        struct curl_list *longer = curl.slist_append(list, headers[i]);
        if (!longer) {
            curl.slist_free_all(list);
            copy_error(error, error_capacity, "out of memory for the request's headers");
            return -1;
        }
        list = longer;
    }
    char message[ERROR_SIZE] = "";
    struct sinks sinks = {on_header, on_body, context};
    curl.easy_setopt(handle, OPT_URL, url);
    // What the client is tested with against the stores; curl would offer HTTP/2 over TLS.
    curl.easy_setopt(handle, OPT_HTTP_VERSION, (long)HTTP_VERSION_1_1);
    curl.easy_setopt(handle, OPT_NOSIGNAL, 1L);
    curl.easy_setopt(handle, OPT_ERRORBUFFER, message);
    curl.easy_setopt(handle, OPT_HTTPHEADER, list);
    curl.easy_setopt(handle, OPT_HEADERFUNCTION, deliver_header);
    curl.easy_setopt(handle, OPT_HEADERDATA, &sinks);
    curl.easy_setopt(handle, OPT_WRITEFUNCTION, deliver_body);
    curl.easy_setopt(handle, OPT_WRITEDATA, &sinks);
    curl.easy_setopt(handle, OPT_CONNECTTIMEOUT, connect_timeout);
    // A private CA or a self-signed server certificate, trusted instead of the system's CAs:
    // Debian's libcurl also has a CA folder built in, which CAINFO alone would leave trusted.
    if (ca_file) {
        curl.easy_setopt(handle, OPT_CAINFO, ca_file);
        curl.easy_setopt(handle, OPT_CAPATH, (const char *)NULL);
    }
    // Idle: less than a byte a second for this long. Total: the whole request.
    curl.easy_setopt(handle, OPT_LOW_SPEED_LIMIT, 1L);
    curl.easy_setopt(handle, OPT_LOW_SPEED_TIME, idle_timeout);
    curl.easy_setopt(handle, OPT_TIMEOUT, total_timeout);
    if (strcmp(method, "HEAD") == 0) {
        curl.easy_setopt(handle, OPT_NOBODY, 1L);
    } else if (sends_body) {
        // The body is sent from the caller's bytes, not copied; its length is set, so it does not go chunked.
        curl.easy_setopt(handle, OPT_POSTFIELDS, body ? body : "");
        curl.easy_setopt(handle, OPT_POSTFIELDSIZE_LARGE, (long long)body_length);  // curl_off_t is 64 bits
        curl.easy_setopt(handle, OPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl.easy_setopt(handle, OPT_CUSTOMREQUEST, method);
    }
    // With NOSIGNAL, a write to a connection the store closed may raise SIGPIPE, which would end
    // the process; it is blocked on this thread for the request and a pending one taken away.
    sigset_t pipe_only, previous;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    int blocked = pthread_sigmask(SIG_BLOCK, &pipe_only, &previous) == 0 && !sigismember(&previous, SIGPIPE);
    int code = curl.easy_perform(handle);
    if (blocked) {
        const struct timespec now = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &now) == SIGPIPE) {}
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
    }
    curl.slist_free_all(list);
    curl.easy_setopt(handle, OPT_ERRORBUFFER, NULL);
    if (code != 0) {
        copy_error(error, error_capacity, message[0] ? message : curl.easy_strerror(code));
        return code;
    }
    curl.easy_getinfo(handle, INFO_RESPONSE_CODE, status);
    return 0;
}
