#ifndef COMMON_BANNED_H
#define COMMON_BANNED_H

/*
 * Functions that invite overflows or hidden truncation. Include this last in
 * a .c file; `make check` also greps the tree for them. Use struct buf or
 * snprintf with a checked result instead.
 */
#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)

#endif
