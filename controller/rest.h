#ifndef CTRL_REST_H
#define CTRL_REST_H

/*
 * The REST face's rows (controller/rest.c, controller/route.h): /v1/hosts
 * and /v1/training-jobs, and a last row refusing any other /v1/ path.
 */
struct ctrl_route_block;

extern const struct ctrl_route_block ctrl_rest_routes;

#endif
