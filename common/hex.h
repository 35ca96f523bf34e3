#ifndef COMMON_HEX_H
#define COMMON_HEX_H

/* The value of hexadecimal digit c (either case), or -1. */
int hex_digit(int c);

#endif
