"""The reference page of bench/controls.py: a bare Streamlit page with one slider and one Plotly chart, no
work of ours. `streamlit run bench/bare_page.py` draws it; bench/controls.py serves it beside the app in the
same run and times its first draw and its slider round trip, to compare the app's against."""
import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.title("Bare page")
n = st.slider("n", 2, 64, 16, key="bare_n")
x = np.arange(n)
st.plotly_chart(go.Figure(go.Scatter(x=x, y=np.sin(x / 3.0))), key="bare_chart")
