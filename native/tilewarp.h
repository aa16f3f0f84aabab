// tilewarp native umbrella header: included by every generated kernel (CPU and CUDA).
#pragma once
#include "core/target.h"
#include "core/scalar.h"
#include "core/vec.h"
#include "core/mat.h"
#include "core/struct.h"
#include "runtime/launch.h"
#include "runtime/array.h"
#include "runtime/atomic.h"
#include "core/tuple.h"
#include "core/control.h"
