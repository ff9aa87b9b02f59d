"""A training curve with one logged point is ticked at its step, never at half steps (9.5, 10.5)."""
from app.charts.training import loss_figure


def test_one_point_is_ticked_at_its_step():
    fig = loss_figure([{"kind": "train", "step": 10, "loss": 2.5}, {"kind": "eval", "step": 10, "val_loss": 2.7}],
                      title="loss", train_name="train", val_name="val", x_title="step", y_title="loss")
    assert list(fig.layout.xaxis.tickvals) == [10]


def test_a_long_run_keeps_plotly_s_ticks():
    records = [{"kind": "train", "step": s, "loss": 1.0} for s in range(0, 1000, 50)]
    fig = loss_figure(records, title="loss", train_name="train", val_name="val", x_title="step", y_title="loss")
    assert fig.layout.xaxis.tickvals is None
