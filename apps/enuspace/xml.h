/*
 * xml.h - a small XML reader for enuSpace's SVG pages, hardened for hostile input: no DTD
 * (a DOCTYPE is an error, so no entity can be declared or expanded), only the five predefined
 * entities and character references, a nesting limit, at most ENU_XML_MAX_ATTRS attributes an
 * element, start and end tags that must match. It reads in place (the buffer is modified) and
 * calls back for each element start and end; text is skipped.
 */
#ifndef BF_ENU_XML_H
#define BF_ENU_XML_H

#include <stddef.h>

#define ENU_XML_MAX_ATTRS 256

typedef struct enu_xml_attr {
    const char *name, *value;
} enu_xml_attr;

typedef struct enu_xml_handler {
    /* Return 0 to go on, -1 to stop with `err` set. `depth` is 0 for the root. */
    int (*start)(void *user, const char *name, const enu_xml_attr *attrs, int n_attrs, int depth,
                 char *err, size_t errsz);
    int (*end)(void *user, const char *name, int depth, char *err, size_t errsz);
    void *user;
} enu_xml_handler;

/* Parse the NUL-terminated `text` (len bytes, modified in place). 0, or -1 with `err` naming
 * the line. */
int enu_xml_parse(char *text, size_t len, int max_depth, const enu_xml_handler *h, char *err,
                  size_t errsz);

#endif /* BF_ENU_XML_H */
