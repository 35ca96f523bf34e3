#ifndef COMMON_NETUTIL_H
#define COMMON_NETUTIL_H

/*
 * Whether a TCP listener could bind port on every IPv4 address now, as a
 * training program's rendezvous does (with SO_REUSEADDR, so a port whose
 * last connection lingers in TIME_WAIT counts as free). Returns 1 or 0, or
 * -1 when no socket could be made to ask.
 */
int net_port_bindable(int port);

#endif
