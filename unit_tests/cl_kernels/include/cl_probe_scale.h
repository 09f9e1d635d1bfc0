/* Included by cl_probe_headers.cl through -I. */
#define PROBE_SCALE 3
