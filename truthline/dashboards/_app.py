"""The Streamlit script that ``truthline dashboard`` runs (``streamlit run _app.py``)."""

from truthline.dashboards._frame import main

main()
