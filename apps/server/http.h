/*
 * http.h - the libwebsockets layer of `blockflow serve` (http.c), as seen by serve.c: no lws
 * types leak out of http.c.
 */
#ifndef BF_SERVER_HTTP_H
#define BF_SERVER_HTTP_H

#include "server.h"

typedef struct srv_http srv_http;

/*
 * Listen on iface:port (port 0: any free port) on app->loop and route requests to app.
 * Returns NULL (why filled) when nothing was started; otherwise a handle whose
 * srv_http_port() is -1 when listening failed (why filled; stop and free it).
 */
srv_http *srv_http_start(srv_app *app, const char *iface, int port, bool ipv6, char *why,
                         size_t n);
/* The port listened on, or -1. */
int srv_http_port(const srv_http *h);
/* Close every connection and the listening socket (asynchronously, on the loop). */
void srv_http_stop(srv_http *h);
bool srv_http_stopped(const srv_http *h);
void srv_http_free(srv_http *h);

#endif
