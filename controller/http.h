#ifndef CTRL_HTTP_H
#define CTRL_HTTP_H

/*
 * libmicrohttpd's plumbing (ctrl_http_start() and ctrl_http_stop() are in
 * controller/ctrl.h): connections, bodies, answers. Where a request goes
 * is the front door's (controller/front.h).
 */
#include "controller/request.h"

/* A fresh request id (a UUID), as x-amzn-RequestId carries it. */
void ctrl_http_request_id(char out[37]);

#endif
