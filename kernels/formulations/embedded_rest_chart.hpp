// nholo/kernels/formulations/embedded_rest_chart.hpp — the second chart of
// the embedded formulation (formulations/embedded.hpp), in which its motion
// passes the states where the embedded constraint q_dep = phi(q_ind, qd_ind, t)
// has no derivative (the sleigh at rest: theta = atan2(yd, xd) at v = 0).
// docs/formulations.md, "Through rest", derives everything below.
//
// The model's own constraints c(q, qd, t) = 0 and the embedded ones
// g = q_dep - phi = 0 hold on the same states. Near them c = D g + O(g^2)
// with the k x k matrix
//     D_{l l'} = dc_l / dq_dep(l')          (the sleigh: dc/dtheta = -v)
// so the Lagrangians L + lambda . c and L + ell . g agree to first order in
// g with ell = D^T lambda, and their Euler–Lagrange equations (the vakonomic
// equations of c, and the embedded formulation's regular form) have the same
// solutions on g = 0. In the embedded chart the state carries ell; in the
// rest chart it carries lambda and the motion is integrated by the
// vakonomic equations of the model's own constraints, which stay regular
// where D is singular (the sleigh at rest: ell = -v lambda -> 0 there, and
// lambda = -ell / v is what keeps the information).
//
// Which chart: the integrator bounds the error of the state component to
// about atol + rtol |z|; in the embedded chart an error d ell is an error
// D^-T d ell in lambda, in the rest chart an error d lambda is D^T d lambda
// in ell. The embedded chart bounds both multipliers at least as tightly
// where the smallest pivot of D (partial-pivoting LU; |D| for k = 1) is at
// least 1, the rest chart where it is below. A trajectory moves to the rest
// chart after a step that ends with that pivot below rest_chart_enter (1/2)
// and back after one that ends above rest_chart_leave (2): the gap keeps a
// trajectory near the threshold from switching at every step. The switch is
// made in post_step (the FSAL rate is then evaluated again), so both charts
// describe one motion and the state component is converted exactly by
// ell = D^T lambda.
#pragma once

#include "kernels/dual.hpp"
#include "kernels/formulations/vakonomic.hpp"
#include "kernels/linalg.hpp"
#include "kernels/lu.hpp"

namespace nholo {

// The model with its own constraints and no nonideal force (a variational
// principle knows none): the rest chart integrates its vakonomic equations.
template <class Model>
struct EmbeddedRestChartModel : Model {
  static void nonideal_force() = delete;
};

// D_{l l'} = dc_l / dq_dep(l') at (q, qd, t), c the model's constraints in
// velocity form (k = Model::m_embedded rows: the embedded rows replace them
// one for one)
template <class Model, class S>
NHOLO_HDI Mat<S, Model::m_embedded, Model::m_embedded> embedded_chart_matrix(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
    const S& t) {
  constexpr int n = Model::n;
  constexpr int k = Model::m_embedded;
  using D = Dual<S, k>;
  Vec<D, n> qa, qda;
  for (int i = 0; i < n; ++i) {
    qa[i] = D(q[i]);
    qda[i] = D(qd[i]);
  }
  for (int l = 0; l < k; ++l) {
    const int i = Model::embedded_coordinate(l);
    seed(qa[i], q[i], l, S(1));
  }
  const Vec<D, k> c = velocity_form_constraints<EmbeddedRestChartModel<Model>>(p, qa, qda, D(t));
  Mat<S, k, k> out;
  for (int l = 0; l < k; ++l)
    for (int j = 0; j < k; ++j) out(l, j) = c[l].d[j];
  return out;
}

// The smallest pivot of D's LU with partial pivoting (|D| for k = 1); 0
// where D is singular or not finite
template <class S, int k>
NHOLO_HDI S embedded_chart_pivot(const Mat<S, k, k>& d, LuFactor<S, k>& f) {
  if (!lu_factor(d, f, S(kDefaultLuRtol))) return S(0);
  S smallest = fabs(f.lu(0, 0));
  for (int l = 1; l < k; ++l) smallest = min_of(smallest, S(fabs(f.lu(l, l))));
  return smallest;
}

// ell = D^T lambda
template <class S, int k>
NHOLO_HDI Vec<S, k> ell_of_lambda(const Mat<S, k, k>& d, const Vec<S, k>& lambda) {
  return mul_transposed(d, lambda);
}

// lambda = D^-T ell; false where D is singular
template <class S, int k>
NHOLO_HDI bool lambda_of_ell(const Mat<S, k, k>& d, const Vec<S, k>& ell, Vec<S, k>& lambda) {
  return lu_solve_system(transpose(d), ell, lambda, S(kDefaultLuRtol));
}

}  // namespace nholo
