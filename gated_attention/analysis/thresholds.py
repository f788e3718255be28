"""The thresholds of the reverse engineering: one name and one value per idea, read by every
analysis, experiment and chapter (none keeps a literal of its own).

    PRUNE_TOL          a neuron is dead when the product of weight norms of its pruning rule
                       (``pruning``, Fig. 2A) is at most this
    LAM_TOL            the lam groups of Fig. 2B (``lam_groups``): key-value neurons have
                       lam > 1 - LAM_TOL, query neurons lam < LAM_TOL, the rest are "between"
    MEMORY_LAM_ICL     in-context regression (Sec. 5.2, ``readings.gd_learned``): a used hidden
                       neuron with lam above this is a memory neuron (trained memories sit below
                       1 - LAM_TOL there, so the key-value cut would miss them)
    MEMORY_LAM_RECALL  associative recall (App. D.3, ``recall_algorithms``): memory neurons
                       (lam >= this) against current-input ones; the criteria were committed
                       with this cut
"""

PRUNE_TOL = 1e-3
LAM_TOL = 0.01
MEMORY_LAM_ICL = 0.9
MEMORY_LAM_RECALL = 0.5
