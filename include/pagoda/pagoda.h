/**
 * \file pagoda.h
 * \brief The umbrella header: include this one to get the whole public API.
 */
#ifndef PAGODA_PAGODA_H
#define PAGODA_PAGODA_H

#include "pagoda/common.h"
#include "pagoda/status.h"
#include "pagoda/version.h"
#include "pagoda/log.h"
#include "pagoda/dtype.h"
#include "pagoda/ops.h"
#include "pagoda/plugin.h"
#include "pagoda/backend.h"
#include "pagoda/model.h"
#include "pagoda/tokenizer.h"
#include "pagoda/mesh.h"
#include "pagoda/kv_cache.h"
#include "pagoda/plan.h"
#include "pagoda/constraint.h"
#include "pagoda/request.h"
#include "pagoda/engine.h"
#include "pagoda/engine_stats.h"
#include "pagoda/kernel_choice.h"
#include "pagoda/server.h"
#include "pagoda/quantize.h"

#endif /* PAGODA_PAGODA_H */
