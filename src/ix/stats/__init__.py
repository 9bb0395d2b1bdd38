"""Pure statistics on numbers and arrays (numpy/scipy): knows nothing of experiments.

Intervals that are right at small N (STATS.md): Beta posteriors for rates, exact comparisons
of independent and paired subjects, clustered standard errors, pass@k and pass^k, intervals
for precision/recall/F1, power and sample size, and a `bayes_evals`-compatible face.

`from ix.stats import beta_interval` works for every name below; each submodule is imported
on first use, because scipy takes a third of a second to import and most commands need none
of it.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, tuple[str, ...]] = {
    "intervals": ("beta_interval", "wilson_interval", "clopper_pearson_interval",
                  "jeffreys_interval", "wald_interval"),
    "classification": ("precision_interval", "recall_interval", "f1_interval",
                       "f1_prob_a_beats_b", "f1_diff_cdf", "f1_diff_interval",
                       "f1_diff_cdf_bounds"),
    "passk": ("pass_at_k", "pass_hat_k", "mean_pass_at_k", "mean_pass_hat_k",
              "pass_k_intervals"),
    "difference": ("difference_interval", "DifferenceInterval"),
    "case_level": ("case_level_difference", "CaseLevelDifference"),
    "describe": ("describe", "correlation", "Description", "Correlation"),
    "comparisons": ("prob_a_beats_b", "diff_interval", "paired_prob_a_beats_b",
                    "paired_diff_interval", "mcnemar_exact", "diff_cdf", "paired_diff_cdf",
                    "diff_cdf_bounds", "paired_diff_cdf_bounds"),
    "paired_probit": ("probit_prob_a_beats_b", "probit_diff_interval", "probit_diff_cdf"),
    "decisions": ("goal_verdict", "goal_outcome", "bound_verdict", "GoalVerdict"),
    "clustered": ("clustered_se", "paired_se", "hierarchical_interval", "hierarchical_mean"),
    "sequential": ("majority_vote_probability", "flip_probability", "StoppingRule",
                   "path_counts", "stopping_distribution", "unbiased_first_k",
                   "early_vote_error"),
    "reliability": ("icc_oneway", "design_effect"),
    "power": ("paired_variances", "sample_size_two_proportions", "mde_paired", "n_paired",
              "n_for_interval_width", "holm"),
    "bayes_evals": ("independent_intervals", "independent_comparisons", "paired_comparisons"),
    "quantiles": ("quantile_interval", "order_statistic_ranks", "min_sample",
                  "QuantileEstimate"),
    "reachability": ("reachability", "capped_effect", "Reach"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "CaseLevelDifference",
    "Correlation",
    "Description",
    "DifferenceInterval",
    "GoalVerdict",
    "QuantileEstimate",
    "Reach",
    "StoppingRule",
    "beta_interval",
    "bound_verdict",
    "capped_effect",
    "case_level_difference",
    "clopper_pearson_interval",
    "clustered_se",
    "correlation",
    "describe",
    "design_effect",
    "diff_cdf",
    "diff_cdf_bounds",
    "diff_interval",
    "difference_interval",
    "early_vote_error",
    "f1_diff_cdf",
    "f1_diff_cdf_bounds",
    "f1_diff_interval",
    "f1_interval",
    "f1_prob_a_beats_b",
    "flip_probability",
    "goal_outcome",
    "goal_verdict",
    "hierarchical_interval",
    "hierarchical_mean",
    "holm",
    "icc_oneway",
    "independent_comparisons",
    "independent_intervals",
    "jeffreys_interval",
    "majority_vote_probability",
    "mcnemar_exact",
    "mde_paired",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "min_sample",
    "n_for_interval_width",
    "n_paired",
    "order_statistic_ranks",
    "paired_comparisons",
    "paired_diff_cdf",
    "paired_diff_cdf_bounds",
    "paired_diff_interval",
    "paired_prob_a_beats_b",
    "paired_se",
    "paired_variances",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_intervals",
    "path_counts",
    "precision_interval",
    "prob_a_beats_b",
    "probit_diff_cdf",
    "probit_diff_interval",
    "probit_prob_a_beats_b",
    "quantile_interval",
    "reachability",
    "recall_interval",
    "sample_size_two_proportions",
    "stopping_distribution",
    "unbiased_first_k",
    "wald_interval",
    "wilson_interval",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ix.stats' has no attribute {name!r}")
    value = getattr(import_module(f"ix.stats.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from ix.stats.bayes_evals import (
        independent_comparisons,
        independent_intervals,
        paired_comparisons,
    )
    from ix.stats.case_level import CaseLevelDifference, case_level_difference
    from ix.stats.classification import (
        f1_diff_cdf,
        f1_diff_cdf_bounds,
        f1_diff_interval,
        f1_interval,
        f1_prob_a_beats_b,
        precision_interval,
        recall_interval,
    )
    from ix.stats.clustered import (
        clustered_se,
        hierarchical_interval,
        hierarchical_mean,
        paired_se,
    )
    from ix.stats.comparisons import (
        diff_cdf,
        diff_cdf_bounds,
        diff_interval,
        mcnemar_exact,
        paired_diff_cdf,
        paired_diff_cdf_bounds,
        paired_diff_interval,
        paired_prob_a_beats_b,
        prob_a_beats_b,
    )
    from ix.stats.decisions import GoalVerdict, bound_verdict, goal_outcome, goal_verdict
    from ix.stats.describe import Correlation, Description, correlation, describe
    from ix.stats.difference import DifferenceInterval, difference_interval
    from ix.stats.intervals import (
        beta_interval,
        clopper_pearson_interval,
        jeffreys_interval,
        wald_interval,
        wilson_interval,
    )
    from ix.stats.paired_probit import (
        probit_diff_cdf,
        probit_diff_interval,
        probit_prob_a_beats_b,
    )
    from ix.stats.passk import (
        mean_pass_at_k,
        mean_pass_hat_k,
        pass_at_k,
        pass_hat_k,
        pass_k_intervals,
    )
    from ix.stats.power import (
        holm,
        mde_paired,
        n_for_interval_width,
        n_paired,
        paired_variances,
        sample_size_two_proportions,
    )
    from ix.stats.quantiles import (
        QuantileEstimate,
        min_sample,
        order_statistic_ranks,
        quantile_interval,
    )
    from ix.stats.reachability import Reach, capped_effect, reachability
    from ix.stats.reliability import design_effect, icc_oneway
    from ix.stats.sequential import (
        StoppingRule,
        early_vote_error,
        flip_probability,
        majority_vote_probability,
        path_counts,
        stopping_distribution,
        unbiased_first_k,
    )
