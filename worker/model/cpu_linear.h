// Linear layers on the CPU through oneDNN.
//
// Debian's LibTorch multiplies matrices with a generic reference BLAS
// (BLAS_INFO=generic): aten::addmm/mm take about 75% of a fashion_cnn step
// on the CPU, while its oneDNN (MKL-DNN) convolutions are fast. LinearForward
// computes y = x W^T + b as a 1x1 convolution of x viewed as (N, in, 1, 1)
// with W viewed as (out, in, 1, 1): the same parameters, the same function
// up to float summation order, gradients through the convolution's backward,
// 4-7x faster for fc 2304->600 at batch 100 (measured on the 2-core machine).
// Anything else (CUDA tensors, other dtypes, non-2-D input, an empty batch,
// LibTorch without MKL-DNN, or GRADSYNC_CPU_LINEAR=aten in the environment)
// takes the module's own forward.
// Thread safety: as the module's forward (the environment is read once).
#pragma once

#include <torch/torch.h>

namespace gradsync {

// fc->forward(x), through oneDNN when CpuLinearUsesOneDnn() and x is a
// 2-D float32 CPU tensor with at least one row.
torch::Tensor LinearForward(torch::nn::Linear& fc, const torch::Tensor& x);

// LibTorch has MKL-DNN and GRADSYNC_CPU_LINEAR is not "aten".
bool CpuLinearUsesOneDnn();

}  // namespace gradsync
