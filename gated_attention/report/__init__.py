"""Report: the scorecard and the verdicts, the one table renderer, and the figures (readings of
runs live in ``readings``; sentences and captions in the chapters).

Modules:
    rows               one scorecard row (``Record``) and how its cells read
    scorecard          every reproduced number beside the paper's (+ ``paper_values.json``)
    claims             the paper's claims and their status from the rows (the verdicts' rules)
    verdict            each chapter's verdict from its rows (the one generated sentence)
    budget_text        a row's budget as text, against the paper's
    scorecard_page     the scorecard grouped by the paper's claims, both budgets
    table              the one table renderer: rows to a Markdown table
    run_source         a row's note when its run is a recorded one: the code that trained it
    execution_status   the book's chapters and how each was executed (profile, time, versions)
Figures:
    plotting           the gated RNN's weights (Fig. 1, Fig. 2B) and the construction's cost
    teacher_plots      the teacher-student chapters
    edge_plots         Fig. 3A-C: every seed's excess loss against the size
    regression_plots   the in-context regression chapters
    family_plots       Fig. 4A/B: loss against parameter count per family
    recall_plots       App. D.3 (Fig. 7): accuracy and loss against the recall networks
    beyond_plots       "Beyond the paper"
"""
