// nholo/bench/eigen_direct.hpp — baseline 3: the fundamental equation written
// directly with Eigen, the way one would prototype it: dynamic-size matrices
// (heap-allocated on every evaluation), Cholesky (LLT) for M and a JacobiSVD
// pseudoinverse of K = A M^-1 A^T per evaluation (Udwadia & Wanichanon (2010)
// eq 2.6 with the nonideal term of Udwadia (2005)):
//   a = M^-1 F,  c = M^-1 C,  K = A M^-1 A^T,
//   qdd = a + c + M^-1 A^T K^+ (b - A (a + c))
// M, F, A, b, C are the hand-written ones of bench_systems.hpp (Hand<Model>),
// so the difference to HandSystem is the linear algebra alone.
#pragma once

#include <Eigen/Dense>

#include "bench_systems.hpp"

namespace nholo::bench {

// Moore–Penrose pseudoinverse by JacobiSVD, singular values below
// rtol * sigma_max treated as zero (as kernels/pinv.hpp).
inline Eigen::MatrixXd eigen_pinv(const Eigen::MatrixXd& K, double rtol) {
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(K, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd& s = svd.singularValues();
  const double cut = s.size() ? rtol * s(0) : 0.0;
  Eigen::VectorXd inv(s.size());
  for (Eigen::Index i = 0; i < s.size(); ++i) inv(i) = s(i) > cut && s(i) > 0.0 ? 1.0 / s(i) : 0.0;
  return svd.matrixV() * inv.asDiagonal() * svd.matrixU().transpose();
}

template <class Model>
struct EigenSystem : BenchSystemBase<Model, EigenSystem<Model>> {
  using Base = BenchSystemBase<Model, EigenSystem<Model>>;
  using Base::m;
  using Base::N;
  using Base::n;
  Status operator()(double t, const Vec<double, N>& y, Vec<double, N>& dydt) const {
    Vec<double, n> q, qd, Fv, Cv;
    Mat<double, n, n> Mm;
    Mat<double, m, n> Am;
    Vec<double, m> bv;
    split_state(y, q, qd);
    Hand<Model>::terms(this->params, q, qd, t, Mm, Fv, Am, bv, Cv);
    // into dynamic-size Eigen objects
    Eigen::MatrixXd M(n, n), A(m, n);
    Eigen::VectorXd F(n), b(m), C(n);
    for (int i = 0; i < n; ++i) {
      F(i) = Fv[i];
      C(i) = Cv[i];
      for (int j = 0; j < n; ++j) M(i, j) = Mm(i, j);
    }
    for (int l = 0; l < m; ++l) {
      b(l) = bv[l];
      for (int j = 0; j < n; ++j) A(l, j) = Am(l, j);
    }
    const Eigen::LLT<Eigen::MatrixXd> llt(M);
    if (llt.info() != Eigen::Success) return Status::singular;
    const Eigen::VectorXd a = llt.solve(F);
    const Eigen::VectorXd c = llt.solve(C);
    const Eigen::MatrixXd MinvAt = llt.solve(A.transpose());
    const Eigen::MatrixXd K = A * MinvAt;
    const Eigen::MatrixXd Kp = eigen_pinv(K, this->eval.pinv.rtol);
    const Eigen::VectorXd qdd = a + c + MinvAt * (Kp * (b - A * (a + c)));
    for (int i = 0; i < n; ++i) {
      dydt[i] = qd[i];
      dydt[n + i] = qdd(i);
    }
    return all_finite(dydt) ? Status::ok : Status::non_finite;
  }
};

}  // namespace nholo::bench
