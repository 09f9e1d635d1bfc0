/* The layer's state, apart from its entry points so tests can drive the
 * layer's files with a table of their own. */
#include "cl_layer_internal.h"

zcc_state zcc_layer;
