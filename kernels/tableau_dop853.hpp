// nholo/kernels/tableau_dop853.hpp — Dormand–Prince 8(5,3), the explicit
// Runge–Kutta pair of Hairer's DOP853 (Hairer, Nørsett & Wanner, "Solving
// Ordinary Differential Equations I", 2nd ed., Sec. II.10). Satisfies the
// Tableau concept of tableaus.hpp.
//
// Stages. One step uses s = 12 stages k_0 .. k_11 (k_i = f(t + c_i h, Y_i)).
// The propagated solution y_new = y + h sum_i b(i) k_i is of order 8; b(11) is
// nonzero, so the 12th stage (c = 1, evaluated at an intermediate Y_11 that is
// NOT y_new) is part of the update. f(t + h, y_new) is therefore a 13th
// evaluation that the step itself never needs (the original code computes it
// after acceptance, for dense output and as k_0 of the next step). Hence
// fsal = false: a stepper may still reuse f(t + h, y_new) as the next k_0, but
// that is its own bookkeeping, not a stage of this tableau.
//
// Error estimation (two_estimates = true). With the 12 stages of a step:
//   err5 = h sum_i e(i)  k_i      e  = b - bhat5, bhat5 of order 5
//   err3 = h sum_i e3(i) k_i      e3 = b - bhat3, bhat3 of order 3 (weights on
//                                 k_0, k_8, k_11 only)
// Neither is used alone. Per component j = 0 .. n-1 take the scale
//   sk_j = atol + rtol * max(|y_j|, |y_new_j|)
// and the RMS norms
//   r5 = sqrt( (1/n) sum_j (err5_j / sk_j)^2 ),
//   r3 = sqrt( (1/n) sum_j (err3_j / sk_j)^2 ).
// The combined error (Hairer's DOP853, identical to scipy's DOP853) is
//   err = r5^2 / sqrt(r5^2 + 0.01 r3^2),      err = 0 if r5 = r3 = 0,
// which is combined_error(r5, r3) below. Equivalently, with the unnormalised
// sums S5 = sum_j (err5_j / sk_j)^2, S3 likewise:
//   err = S5 / sqrt(n (S5 + 0.01 S3)).
// The step is accepted if err <= 1. Because err5 = O(h^6) and err3 = O(h^4),
// err behaves like h^8 (= err5^2 / (0.1 err3) once err3 dominates): the
// step-size controller must use the exponent 1/8, h_new = h * fac with
// fac = safety * err^(-1/8) (Hairer: expo1 = 1/8 - 0.2 beta; scipy uses
// error_estimator_order = 7), NOT 1/(error_order + 1) = 1/6.
// error_order = 5 states the order of the bhat5 solution only.
//
// Coefficients: the published DOP853 values (30 significant digits, rounded
// to double by the compiler); the order conditions are checked up to order 8
// in tests/test_tableaus.cpp.
#pragma once

#include "scalar_math.hpp"

namespace nholo {

struct TableauDop853 {
  static constexpr int stages = 12;
  static constexpr int order = 8;
  static constexpr int error_order = 5;
  static constexpr bool fsal = false;
  static constexpr bool two_estimates = true;
  // Exponent denominator for step-size control with the combined estimate
  // (see above): fac = safety * err^(-1 / control_order).
  static constexpr int control_order = 8;

  NHOLO_HD static constexpr double c(int i) {
    constexpr double t[12] = {0.0,
                              0.526001519587677318785587544488e-01,
                              0.789002279381515978178381316732e-01,
                              0.118350341907227396726757197510,
                              0.281649658092772603273242802490,
                              1.0 / 3.0,
                              0.25,
                              4.0 / 13.0,
                              127.0 / 195.0,
                              0.6,
                              6.0 / 7.0,
                              1.0};
    return t[i];
  }

  NHOLO_HD static constexpr double a(int i, int j) {
    constexpr double t[12][12] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {5.26001519587677318785587544488e-2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {1.97250569845378994544595329183e-2, 5.91751709536136983633785987549e-2, 0, 0, 0, 0, 0, 0,
         0, 0, 0, 0},
        {2.95875854768068491816892993775e-2, 0, 8.87627564304205475450678981324e-2, 0, 0, 0, 0, 0,
         0, 0, 0, 0},
        {2.41365134159266685502369798665e-1, 0, -8.84549479328286085344864962717e-1,
         9.24834003261792003115737966543e-1, 0, 0, 0, 0, 0, 0, 0, 0},
        {3.7037037037037037037037037037e-2, 0, 0, 1.70828608729473871279604482173e-1,
         1.25467687566822425016691814123e-1, 0, 0, 0, 0, 0, 0, 0},
        {3.7109375e-2, 0, 0, 1.70252211019544039314978060272e-1, 6.02165389804559606850219397283e-2,
         -1.7578125e-2, 0, 0, 0, 0, 0, 0},
        {3.70920001185047927108779319836e-2, 0, 0, 1.70383925712239993810214054705e-1,
         1.07262030446373284651809199168e-1, -1.53194377486244017527936158236e-2,
         8.27378916381402288758473766002e-3, 0, 0, 0, 0, 0},
        {6.24110958716075717114429577812e-1, 0, 0, -3.36089262944694129406857109825,
         -8.68219346841726006818189891453e-1, 2.75920996994467083049415600797e1,
         2.01540675504778934086186788979e1, -4.34898841810699588477366255144e1, 0, 0, 0, 0},
        {4.77662536438264365890433908527e-1, 0, 0, -2.48811461997166764192642586468,
         -5.90290826836842996371446475743e-1, 2.12300514481811942347288949897e1,
         1.52792336328824235832596922938e1, -3.32882109689848629194453265587e1,
         -2.03312017085086261358222928593e-2, 0, 0, 0},
        {-9.3714243008598732571704021658e-1, 0, 0, 5.18637242884406370830023853209,
         1.09143734899672957818500254654, -8.14978701074692612513997267357,
         -1.85200656599969598641566180701e1, 2.27394870993505042818970056734e1,
         2.49360555267965238987089396762, -3.0467644718982195003823669022, 0, 0},
        {2.27331014751653820792359768449, 0, 0, -1.05344954667372501984066689879e1,
         -2.00087205822486249909675718444, -1.79589318631187989172765950534e1,
         2.79488845294199600508499808837e1, -2.85899827713502369474065508674,
         -8.87285693353062954433549289258, 1.23605671757943030647266201528e1,
         6.43392746015763530355970484046e-1, 0}};
    return t[i][j];
  }

  NHOLO_HD static constexpr double b(int i) {
    constexpr double t[12] = {5.42937341165687622380535766363e-2,
                              0.0,
                              0.0,
                              0.0,
                              0.0,
                              4.45031289275240888144113950566,
                              1.89151789931450038304281599044,
                              -5.8012039600105847814672114227,
                              3.1116436695781989440891606237e-1,
                              -1.52160949662516078556178806805e-1,
                              2.01365400804030348374776537501e-1,
                              4.47106157277725905176885569043e-2};
    return t[i];
  }

  // b - bhat5 (the published "er" weights), bhat5 of order 5.
  NHOLO_HD static constexpr double e(int i) {
    constexpr double t[12] = {0.1312004499419488073250102996e-1,
                              0.0,
                              0.0,
                              0.0,
                              0.0,
                              -0.1225156446376204440720569753e+1,
                              -0.4957589496572501915214079952,
                              0.1664377182454986536961530415e+1,
                              -0.3503288487499736816886487290,
                              0.3341791187130174790297318841,
                              0.8192320648511571246570742613e-1,
                              -0.2235530786388629525884427845e-1};
    return t[i];
  }

  // b - bhat3, bhat3 of order 3 (the published "bhh" weights).
  NHOLO_HD static constexpr double e3(int i) {
    constexpr double bhat3[12] = {0.244094488188976377952755905512,
                                  0.0,
                                  0.0,
                                  0.0,
                                  0.0,
                                  0.0,
                                  0.0,
                                  0.0,
                                  0.733846688281611857341361741547,
                                  0.0,
                                  0.0,
                                  0.220588235294117647058823529412e-1};
    return b(i) - bhat3[i];
  }

  // Combined error from the RMS scaled norms r5 = ||err5 / sk||, r3 =
  // ||err3 / sk|| (see the header comment); accept the step if <= 1.
  NHOLO_HD static double combined_error(double r5, double r3) {
    const double r5sq = r5 * r5;
    const double den = r5sq + 0.01 * r3 * r3;
    return den > 0.0 ? r5sq / sqrt(den) : 0.0;
  }
};

}  // namespace nholo
